"""POST /api/v1/manifests/: who may record what, digests, idempotency, nothing half-written."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from django.core.management import call_command

from api.models import ApiToken
from api.services import api_token_revoke
from kernelindex import canonical
from runs.models import Benchmark, Environment, Implementation, Protocol, Run, RunRevision, Workload
from tests.api.conftest import auth, rerun_bundle, submitter_bundle
from tests.factories import import_bundles, reference_bundle
from tests.ingest.conftest import DEFINITION_10

pytestmark = pytest.mark.django_db

URL = "/api/v1/manifests/"


def post(client: Any, bundle: Any, token: str | None = None, **extra: Any) -> Any:
    body = bundle if isinstance(bundle, (str, bytes)) else json.dumps(bundle)
    headers = auth(token) if token else {}
    return client.generic("POST", URL, body, content_type="application/json", **headers, **extra)


def snapshot() -> tuple[int, ...]:
    """Row counts of everything a submission could write."""
    return tuple(m.objects.count() for m in (Run, RunRevision, Protocol, Environment, Workload, Implementation))


def test_a_valid_bundle_lands_once(client: Any, alice: Any, alice_token: str) -> None:
    bundle = submitter_bundle()
    first = post(client, bundle, alice_token)
    assert first.status_code == 201, first.json()
    data = first.json()
    assert data["outcome"] == "created"
    run = Run.objects.get(public_id=data["run"]["id"])
    assert run.evidence_level == "submitter_reported"
    assert run.submitter == "TH3CHARLie | TileGym"
    assert first["Location"] == data["run"]["url"]
    # Attributed to the token's owner in the run's revision history.
    revision = run.revisions.get(number=1)
    assert revision.actor == alice and "api: alice" in revision.actor_label
    before = snapshot()
    again = post(client, bundle, alice_token)
    assert again.status_code == 200
    assert again.json()["outcome"] == "unchanged"
    assert again.json()["run"]["id"] == run.public_id
    assert snapshot() == before


def test_a_changed_resubmission_is_a_new_revision(client: Any, alice_token: str) -> None:
    bundle = submitter_bundle()
    run_id = post(client, bundle, alice_token).json()["run"]["id"]
    bundle["run"]["metadata"]["title"] = "TH3CHARLie | TileGym · kernel 62 · B200 (retitled)"
    response = post(client, bundle, alice_token)
    assert response.status_code == 200 and response.json()["outcome"] == "updated"
    assert Run.objects.get(public_id=run_id).revisions.count() == 2


def test_a_tampered_bundle_is_refused_with_the_digest_error(client: Any, alice_token: str) -> None:
    bundle = submitter_bundle()
    declared = bundle["run"]["spec"]["protocolDigest"]
    bundle["protocol"]["spec"]["harness"]["version"] = "v1.0"  # the digest no longer matches
    before = snapshot()
    response = post(client, bundle, alice_token)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "digest_mismatch"
    assert error["field"] == "run.spec.protocolDigest"
    assert declared in error["message"] and "protocol document" in error["message"]
    assert snapshot() == before


def test_an_anonymous_client_cannot_submit(client: Any) -> None:
    before = snapshot()
    response = post(client, submitter_bundle())
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert snapshot() == before


@pytest.mark.parametrize("header", ["Bearer kit_not-a-token", "Bearer", "Token a b"])
def test_an_unknown_token_is_refused(client: Any, header: str) -> None:
    response = client.post(URL, submitter_bundle(), format="json", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_a_revoked_token_is_refused(client: Any, alice_token: str, staff: Any) -> None:
    token = ApiToken.objects.get(user__username="alice")
    api_token_revoke(token=token, actor=staff, reason="laptop lost")
    response = post(client, submitter_bundle(), alice_token)
    assert response.status_code == 401


def test_a_submitter_token_cannot_create_rerun_evidence(client: Any, alice_token: str) -> None:
    before = snapshot()
    response = post(client, rerun_bundle(), alice_token)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "rerun_permission_required"
    assert snapshot() == before
    assert not Run.objects.filter(evidence_level="kernelindex_rerun").exists()


def test_annotations_in_a_bundle_never_raise_the_evidence_level(client: Any, alice_token: str) -> None:
    bundle = submitter_bundle()
    bundle["run"]["metadata"]["annotations"] = {
        "kernelindex.dev/evidence-level": "kernelindex_rerun",
        "kernelindex.dev/source-rank": 1,
        "kernelindex.dev/published-at": "2020-01-01T00:00:00.000Z",
    }
    response = post(client, bundle, alice_token)
    assert response.status_code == 201
    run = Run.objects.get(public_id=response.json()["run"]["id"])
    assert run.evidence_level == "submitter_reported"
    assert run.source_rank is None
    assert run.published_at.year != 2020


def test_a_rerun_token_records_a_rerun_harness_bundle_as_kernelindex_rerun(client: Any, rerun_token: str) -> None:
    # Issue 10: a submission no longer creates another source's benchmark; the rerun's SOL-ExecBench
    # definition must be in the catalogue first (test_a_submission_cannot_add_to_a_source_catalogue).
    call_command("import", str(DEFINITION_10), stdout=open(os.devnull, "w"))  # noqa: SIM115
    response = post(client, rerun_bundle(), rerun_token)
    assert response.status_code == 201, response.json()
    run = Run.objects.get(public_id=response.json()["run"]["id"])
    assert run.evidence_level == "kernelindex_rerun"
    assert run.group.family == "kernelindex_rerun"
    assert response.json()["run"]["evidenceLevel"] == "kernelindex_rerun"
    assert post(client, rerun_bundle(), rerun_token).json()["outcome"] == "unchanged"


def test_a_rerun_token_records_other_bundles_as_submitter_reported(client: Any, rerun_token: str) -> None:
    response = post(client, submitter_bundle(username="rerun-h200"), rerun_token)
    assert response.status_code == 201
    assert Run.objects.get(public_id=response.json()["run"]["id"]).evidence_level == "submitter_reported"


def test_a_tampered_rerun_bundle_never_becomes_rerun_evidence(client: Any, rerun_token: str) -> None:
    bundle = rerun_bundle()
    bundle["run"]["spec"]["timing"]["latencyNs"]["median"] = 1.0
    bundle["implementation"]["spec"]["revision"] = "tampered"
    response = post(client, bundle, rerun_token)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "digest_mismatch"
    assert not Run.objects.exists()


def test_a_token_submits_only_as_its_submitter(client: Any, alice_token: str) -> None:
    response = post(client, submitter_bundle(username="someone else"), alice_token)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "submitter_mismatch"
    assert response.json()["error"]["field"] == "run.spec.sourceNative.submitter"
    assert not Run.objects.exists()


def test_a_submission_never_overwrites_a_source_run(client: Any, alice_token: str) -> None:
    import_bundles([reference_bundle()])
    source_run = Run.objects.get()
    bundle = copy.deepcopy(reference_bundle())
    bundle["run"]["spec"]["sourceNative"]["metrics"]["sol_score"] = 1.0
    bundle["run"]["spec"]["sourceNative"]["submitter"] = "TH3CHARLie | TileGym"
    before = snapshot()
    response = post(client, bundle, alice_token)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "source_not_submittable"
    assert response.json()["error"]["field"] == "run.spec.sourceNative.source"
    assert snapshot() == before
    source_run.refresh_from_db()
    assert source_run.evidence_level == "source_reported" and source_run.revision == 1


def test_a_submission_never_joins_a_source_board(client: Any, alice_token: str) -> None:
    """A new run naming sol-execbench would rank inside the source's own board: refused."""
    bundle = submitter_bundle()
    bundle["run"]["spec"]["sourceNative"]["source"] = "sol-execbench"
    response = post(client, bundle, alice_token)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "source_not_submittable"
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ("{not json", "parse_error", None),
        ('{"run": NaN}', "parse_error", None),
        ('{"run": {}, "run": {}}', "parse_error", None),
        ("[]", "invalid_manifest", None),
        ("{}", "invalid_manifest", None),
        ('{"run": {"apiVersion": "v0"}, "protocol": {}, "environment": {}}', "invalid_manifest", None),
    ],
)
def test_malformed_bodies_are_400_with_a_code(
    client: Any, alice_token: str, body: str, code: str, field: str | None
) -> None:
    response = post(client, body, alice_token)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert not Run.objects.exists()


def test_a_missing_field_is_named(client: Any, alice_token: str) -> None:
    bundle = submitter_bundle()
    del bundle["run"]["spec"]["sourceNative"]["externalId"]
    response = post(client, bundle, alice_token)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "run.spec.sourceNative.externalId"


def test_an_unknown_source_is_refused_without_a_write(client: Any, alice_token: str) -> None:
    bundle = submitter_bundle()
    bundle["run"]["spec"]["sourceNative"]["source"] = "nobody-knows"
    before = snapshot()
    response = post(client, bundle, alice_token)
    assert response.status_code == 400
    assert "unknown source" in response.json()["error"]["message"]
    assert snapshot() == before


def test_other_content_types_are_415(client: Any, alice_token: str) -> None:
    response = client.generic(
        "POST", URL, "run=1", content_type="application/x-www-form-urlencoded", **auth(alice_token)
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_a_submission_cannot_add_to_a_source_catalogue(client: Any, alice_token: str, rerun_token: str) -> None:
    """Issue 10: naming sol-execbench in the workload used to add a benchmark to its catalogue."""
    bundle = submitter_bundle()
    native = bundle["run"]["spec"]["sourceNative"]
    workload = {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "planted"},
        "spec": {"benchmark": {"source": "sol-execbench", "nativeId": native["benchmark"]}},
    }
    bundle["workload"] = workload
    bundle["run"]["spec"]["workloadDigest"] = canonical.digest_of(workload)
    before = snapshot(), Benchmark.objects.count()
    response = post(client, bundle, alice_token)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "benchmark_not_in_catalogue"
    assert response.json()["error"]["field"] == "workload.spec.benchmark.source"
    # Nor a rerun token, for a definition the catalogue does not hold.
    assert post(client, rerun_bundle(), rerun_token).status_code == 403
    assert (snapshot(), Benchmark.objects.count()) == before
    assert not Benchmark.objects.filter(source__slug="sol-execbench").exists()
    # Under its own source it may name a new benchmark.
    workload["spec"]["benchmark"]["source"] = "submitted"
    bundle["run"]["spec"]["workloadDigest"] = canonical.digest_of(workload)
    response = post(client, bundle, alice_token)
    assert response.status_code == 201, response.json()
    assert Benchmark.objects.get().source.slug == "submitted"
