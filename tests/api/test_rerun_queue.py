"""The rerun queue through the API (``api.reruns``, ``api.rerun_views``): who may request, what a
request may name, claim order, leases and attempts, finishing, and the moderation log.

A worker's whole loop against a live server (real harness, real worker processes, concurrent
claims) is in tests/reruns/test_queue_live.py.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api import reruns
from api.models import RerunRequest, RerunState
from api.services import api_token_issue, manifest_submit
from attestations.models import ModerationEvent
from kernelindex import canonical
from runs.models import EvidenceLevel, Run
from tests.api.conftest import auth, rerun_bundle
from tests.factories import sol_bundle

K10 = "010_attention_value_projection_with_transpose"
K62 = "062_kv_cache_update_with_rope_backward"
REQUESTS = "/api/v1/reruns/"
CLAIM = "/api/v1/reruns/claim/"

pytestmark = pytest.mark.usefixtures("shipped_data")


@pytest.fixture
def moderator(django_user_model: Any) -> Any:
    user = django_user_model.objects.create_user("carol", password="unused-password-4", is_staff=True)
    user.groups.add(Group.objects.get(name="moderators"))
    return user


@pytest.fixture
def moderator_token(moderator: Any, staff: Any) -> str:
    return api_token_issue(user=moderator, name="carol's token", issued_by=staff)[1]


def request_rerun(client: Any, token: str, **body: Any) -> Any:
    return client.post(REQUESTS, {"benchmark": K10, "target": "reference", **body}, format="json", **auth(token))


def claim(client: Any, token: str, worker: str = "w1") -> Any:
    return client.post(CLAIM, {"worker": worker}, format="json", **auth(token))


def finish(client: Any, token: str, request_id: int, **body: Any) -> Any:
    return client.post(f"/api/v1/reruns/{request_id}/finish/", body, format="json", **auth(token))


def events(request_id: int) -> list[str]:
    return list(
        ModerationEvent.objects.filter(target_type="rerun_request", target_id=str(request_id))
        .order_by("pk")
        .values_list("action", flat=True)
    )


def record_rerun(token_raw: str, *, external_id: str = "rerun/queue-test", revision: str | None = None) -> Run:
    """Record a real H200 bundle (data/reruns, kernel 10's reference) as the worker would."""
    from api.models import ApiToken, token_hash

    bundle = copy.deepcopy(rerun_bundle())
    bundle["run"]["spec"]["sourceNative"]["externalId"] = external_id
    if revision is not None:
        bundle["implementation"]["spec"]["revision"] = revision
        bundle["run"]["spec"]["implementationDigest"] = canonical.digest_of(bundle["implementation"])
    token = ApiToken.objects.get(key_hash=token_hash(token_raw))
    return manifest_submit(bundle=bundle, token=token).run


# -- requesting ----------------------------------------------------------------------------------


def test_a_moderators_token_queues_a_request_with_one_event(client: Any, moderator_token: str) -> None:
    with CaptureQueriesContext(connection) as queries:
        response = request_rerun(client, moderator_token, reason="check the H200 board", trials=1)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "queued" and body["benchmark"] == K10 and body["target"] == "reference"
    assert body["trials"] == 1 and body["requestedBy"] == "carol" and body["attempts"] == 0
    assert events(body["id"]) == ["rerun_request.requested"]
    event = ModerationEvent.objects.get(target_type="rerun_request")
    assert event.reason == "check the H200 board" and event.actor.username == "carol"
    # token (+ last_used), user's permissions (groups, user perms), benchmark, savepoint,
    # benchmark lock, duplicate check, insert, event, savepoint release, the listed request
    assert len(queries) <= 13, " | ".join(q["sql"][:120] for q in queries.captured_queries)


def test_query_count_of_a_request_is_pinned(client: Any, moderator_token: str, django_assert_num_queries: Any) -> None:
    request_rerun(client, moderator_token, target="torch-compile")  # warms the token's last_used_at
    # 1 token, 2-3 permissions (user perms, group perms), 1 benchmark, savepoint, benchmark lock,
    # open-duplicate check, insert, event, release, 1 request with its joins
    with django_assert_num_queries(11):
        assert request_rerun(client, moderator_token, target="scoring-baseline").status_code == 201


def test_a_signed_in_moderator_requests_with_the_csrf_token_only(moderator: Any) -> None:
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(moderator)
    refused = client.post(REQUESTS, {"benchmark": K10, "target": "reference"}, format="json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["error"]["message"]
    client.get("/accounts/login/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post(REQUESTS, {"benchmark": K10, "target": "reference"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.json()


def test_who_may_not_request(client: Any, alice_token: str, alice: Any, django_user_model: Any) -> None:
    assert client.post(REQUESTS, {"benchmark": K10, "target": "reference"}, format="json").status_code == 401
    assert request_rerun(client, alice_token).status_code == 403
    # Staff outside the moderators group, signed in: no.
    staff_only = django_user_model.objects.create_user("dave", password="x-unused-5", is_staff=True)
    client.force_login(staff_only)
    assert client.post(REQUESTS, {"benchmark": K10, "target": "reference"}, format="json").status_code == 403
    assert not RerunRequest.objects.exists()


def test_a_rerun_token_may_request(client: Any, rerun_token: str) -> None:
    assert request_rerun(client, rerun_token).status_code == 201


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"benchmark": "999_nothing"}, "benchmark", "invalid"),
        ({"benchmark": K62, "target": "scoring-baseline"}, "target", "no_scoring_baseline"),
        ({"target": "run-solution"}, "target", "invalid"),
        ({"target": "run-solution", "run": "zzzzzzzz"}, "run", "invalid"),
        ({"trials": 0}, "trials", "min_value"),
        ({"warmupSeconds": "lots"}, "warmupSeconds", "invalid"),
        ({"target": "fastest"}, "target", "invalid_choice"),
        ({"colour": "red"}, "colour", "invalid"),
    ],
)
def test_bad_requests_are_400_and_write_nothing(
    client: Any, moderator_token: str, body: dict, field: str, code: str
) -> None:
    response = request_rerun(client, moderator_token, **body)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field), error
    assert not RerunRequest.objects.exists()
    assert not ModerationEvent.objects.filter(target_type="rerun_request").exists()


def test_a_non_object_body_is_400(client: Any, moderator_token: str) -> None:
    response = client.post(REQUESTS, [1, 2], format="json", **auth(moderator_token))
    assert response.status_code == 400


def test_the_same_rerun_is_not_queued_twice(client: Any, moderator_token: str) -> None:
    assert request_rerun(client, moderator_token).status_code == 201
    again = request_rerun(client, moderator_token)
    assert again.status_code == 409 and again.json()["error"]["code"] == "rerun_already_queued"
    assert RerunRequest.objects.count() == 1


def test_a_run_without_published_sources_cannot_be_rerun(client: Any, moderator_token: str) -> None:
    leaderboard_row = Run.objects.filter(benchmark__native_id=K10, source__slug="sol-execbench").first()
    response = request_rerun(client, moderator_token, target="run-solution", run=leaderboard_row.public_id)
    assert response.status_code == 400 and response.json()["error"]["code"] == "no_published_solution"


def _solution_bundle() -> dict[str, Any]:
    """alice's team's kernel-10 run whose implementation document publishes its source."""
    bundle = sol_bundle(
        submission_id=910001, username="TH3CHARLie | TileGym", sol_score=0.5, latency_ms=0.04, kernel=K10
    )
    bundle["run"]["spec"]["sourceNative"]["source"] = "submitted"
    content = "import torch\n\n\ndef run(hidden_states, v_proj_weight):\n    return hidden_states @ v_proj_weight.T\n"
    bundle["implementation"] = {
        "apiVersion": canonical.API_VERSION,
        "kind": "Implementation",
        "metadata": {"name": "tilegym-k10"},
        "spec": {
            "project": "TileGym",
            "submitter": "TH3CHARLie | TileGym",
            "revision": "tilegym-k10-r1",
            "language": "pytorch",
            "entryPoint": "kernel.py::run",
            "sources": [{"path": "kernel.py", "content": content}],
            "codeDigest": "sha256:" + canonical.sha256_hex(content.encode()),
        },
    }
    bundle["run"]["spec"]["implementationDigest"] = canonical.digest_of(bundle["implementation"])
    return bundle


def test_a_runs_published_solution_is_queued_and_handed_to_the_worker(
    client: Any, moderator_token: str, alice_token: str, rerun_token: str
) -> None:
    submitted = client.post("/api/v1/manifests/", _solution_bundle(), format="json", **auth(alice_token))
    assert submitted.status_code == 201, submitted.json()
    run_id = submitted.json()["run"]["id"]
    response = client.post(REQUESTS, {"target": "run-solution", "run": run_id}, format="json", **auth(moderator_token))
    assert response.status_code == 201, response.json()
    assert response.json()["run"] == run_id and response.json()["benchmark"] == K10
    work = claim(client, rerun_token).json()
    assert work["expectedRevision"] == "tilegym-k10-r1"
    assert work["solution"]["kind"] == "file"
    solution = work["solution"]["file"]
    assert solution["spec"]["entry_point"] == "kernel.py::run" and solution["definition"] == K10
    assert solution["sources"][0]["content"].startswith("import torch")
    assert '"name": "010_attention_value_projection_with_transpose"' in work["definition"]["files"]["definition.json"]


# -- claiming ------------------------------------------------------------------------------------


def test_claims_take_the_oldest_first_and_carry_what_the_worker_needs(
    client: Any, moderator_token: str, rerun_token: str
) -> None:
    first = request_rerun(client, moderator_token, target="scoring-baseline").json()["id"]
    second = request_rerun(client, moderator_token, target="reference", trials=1, iterations=5).json()["id"]
    work = claim(client, rerun_token, "gpu-a").json()
    assert work["id"] == first and work["attempt"] == 1
    assert work["solution"]["kind"] == "baseline"
    assert work["solution"]["kernel"]["response"]["data"]["name"] == K10
    assert "def run" in work["solution"]["kernel"]["response"]["data"]["baseline"]
    assert work["definition"]["folder"] == K10
    assert work["definition"]["files"]["workload.jsonl"].count("\n") >= 15
    work2 = claim(client, rerun_token, "gpu-b").json()
    assert work2["id"] == second and work2["settings"] == {"trials": 1, "iterations": 5, "warmupSeconds": 3.0}
    assert work2["solution"] == {"kind": "builtin", "spec": "reference"}
    assert claim(client, rerun_token, "gpu-c").status_code == 204
    rows = {r.pk: r for r in RerunRequest.objects.all()}
    assert (rows[first].state, rows[first].worker_name, rows[first].attempts) == ("claimed", "gpu-a", 1)
    assert rows[first].lease_expires_at > timezone.now() + timedelta(minutes=50)
    assert events(first) == ["rerun_request.requested", "rerun_request.claimed"]


def test_only_rerun_tokens_claim(client: Any, moderator_token: str, alice_token: str) -> None:
    request_rerun(client, moderator_token)
    assert claim(client, moderator_token).status_code == 403
    assert claim(client, alice_token).status_code == 403
    assert client.post(CLAIM, {}, format="json").status_code == 401
    assert RerunRequest.objects.get().state == "queued"


def test_claim_query_count_is_pinned(
    client: Any, moderator_token: str, rerun_token: str, django_assert_num_queries: Any
) -> None:
    request_rerun(client, moderator_token)
    claim(client, rerun_token)  # the token's last_used_at
    request_rerun(client, moderator_token, target="torch-compile")
    # token, savepoint, the oldest claimable row (locked where the database can), its update,
    # the claimed event, release, the request with benchmark/run for the work
    # (+ a refresh on databases without SKIP LOCKED)
    expected = 7 if connection.features.has_select_for_update_skip_locked else 8
    with django_assert_num_queries(expected):
        assert claim(client, rerun_token).status_code == 200


@pytest.mark.parametrize("locked", [True, False], ids=["skip-locked", "conditional-update"])
def test_an_expired_lease_returns_to_the_queue_and_counts_an_attempt(
    client: Any, moderator_token: str, rerun_token: str, locked: bool, monkeypatch: Any
) -> None:
    if locked and not connection.features.has_select_for_update_skip_locked:
        pytest.skip("SELECT … FOR UPDATE SKIP LOCKED is PostgreSQL's (this database takes the conditional update)")
    monkeypatch.setattr(type(connection.features), "has_select_for_update_skip_locked", locked)
    request_id = request_rerun(client, moderator_token).json()["id"]
    assert claim(client, rerun_token, "slow").json()["attempt"] == 1
    RerunRequest.objects.filter(pk=request_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    work = claim(client, rerun_token, "fast").json()
    assert work["id"] == request_id and work["attempt"] == 2
    row = RerunRequest.objects.get(pk=request_id)
    assert (row.state, row.worker_name, row.attempts) == ("claimed", "fast", 2)
    assert events(request_id)[-2:] == ["rerun_request.lease_expired", "rerun_request.claimed"]
    # After max_attempts expired leases the request fails, with the reason, and leaves the queue.
    RerunRequest.objects.filter(pk=request_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert claim(client, rerun_token, "third").json()["attempt"] == 3
    RerunRequest.objects.filter(pk=request_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert claim(client, rerun_token, "fourth").status_code == 204
    row.refresh_from_db()
    assert row.state == "failed" and row.attempts == 3
    assert "lease expired on each of its 3 attempt(s)" in row.failure_reason and row.finished_at
    assert events(request_id)[-1] == "rerun_request.failed"


def test_the_conditional_claim_loses_cleanly_to_a_concurrent_claim(
    moderator: Any, rerun_token: str, monkeypatch: Any
) -> None:
    """Between a worker's read and its UPDATE another worker takes the row: the UPDATE matches
    nothing and the loser looks again (and finds nothing), never taking the row twice."""
    from api.models import ApiToken

    benchmark = Run.objects.filter(benchmark__native_id=K10).first().benchmark
    reruns.rerun_request_create(benchmark=benchmark, target="reference", requested_by=moderator)
    token = ApiToken.objects.get(may_record_reruns=True)
    winner: list[Any] = []
    real_lease = reruns.lease_duration

    def lease_after_a_rival_claim() -> Any:
        # Runs after the loser read the row and just before its UPDATE: the rival claims first.
        if not winner:
            winner.append("racing")
            winner.append(reruns._claim_conditional(token=token, worker_name="winner"))
        return real_lease()

    monkeypatch.setattr(reruns, "lease_duration", lease_after_a_rival_claim)
    assert reruns._claim_conditional(token=token, worker_name="loser") == "again"
    assert winner[1].worker_name == "winner"
    row = RerunRequest.objects.get()
    assert (row.worker_name, row.attempts) == ("winner", 1)
    assert events(row.pk).count("rerun_request.claimed") == 1


# -- finishing -----------------------------------------------------------------------------------


def test_done_records_the_rerun_and_the_run_page_links_what_it_re_measured(
    client: Any, moderator_token: str, rerun_token: str
) -> None:
    request_id = request_rerun(client, moderator_token).json()["id"]
    claim(client, rerun_token)
    run = record_rerun(rerun_token)
    assert run.evidence_level == EvidenceLevel.KERNELINDEX_RERUN
    response = finish(client, rerun_token, request_id, state="done", run=run.public_id)
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "done" and response.json()["resultRun"] == run.public_id
    assert events(request_id)[-1] == "rerun_request.done"
    page = client.get(f"/runs/{run.public_id}/")
    source_row = Run.objects.get(
        benchmark__native_id=K10, submitter="Reference Implementation", source__slug="sol-execbench"
    )
    assert f"/runs/{source_row.public_id}/" in page.content.decode()
    # Finishing twice, or by anyone else, is refused.
    assert finish(client, rerun_token, request_id, state="done", run=run.public_id).status_code == 409


def test_done_needs_a_matching_run_of_this_worker(
    client: Any, moderator_token: str, rerun_token: str, alice_token: str
) -> None:
    request_id = request_rerun(client, moderator_token, target="scoring-baseline").json()["id"]
    claim(client, rerun_token)
    assert finish(client, rerun_token, request_id, state="done").json()["error"]["field"] == "run"
    wrong_code = record_rerun(rerun_token)  # the reference, not the scoring baseline
    refused = finish(client, rerun_token, request_id, state="done", run=wrong_code.public_id)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "run_does_not_match"
    assert "'reference', not 'scoring-baseline'" in refused.json()["error"]["message"]
    source_row = Run.objects.filter(source__slug="sol-execbench", benchmark__native_id=K10).first()
    assert finish(client, rerun_token, request_id, state="done", run=source_row.public_id).status_code == 400
    assert finish(client, rerun_token, request_id, state="finished").status_code == 400
    assert RerunRequest.objects.get(pk=request_id).state == "claimed"


def test_failed_needs_the_reason_and_keeps_it(client: Any, moderator_token: str, rerun_token: str) -> None:
    request_id = request_rerun(client, moderator_token).json()["id"]
    claim(client, rerun_token)
    assert finish(client, rerun_token, request_id, state="failed").status_code == 400
    response = finish(client, rerun_token, request_id, state="failed", reason="no CUDA device: torch sees none")
    assert response.status_code == 200
    row = RerunRequest.objects.get(pk=request_id)
    assert (row.state, row.failure_reason, row.result_run) == ("failed", "no CUDA device: torch sees none", None)
    assert ModerationEvent.objects.get(action="rerun_request.failed").reason == "no CUDA device: torch sees none"


def test_only_the_worker_holding_the_claim_finishes(
    client: Any, moderator_token: str, rerun_token: str, django_user_model: Any, staff: Any
) -> None:
    other = django_user_model.objects.create_user("rerun-b", password="unused-password-6")
    other_token = api_token_issue(user=other, name="B", may_record_reruns=True, issued_by=staff)[1]
    request_id = request_rerun(client, moderator_token).json()["id"]
    assert finish(client, rerun_token, request_id, state="failed", reason="x").status_code == 409  # queued
    claim(client, rerun_token)
    assert finish(client, other_token, request_id, state="failed", reason="x").status_code == 409
    assert finish(client, rerun_token, 999999, state="failed", reason="x").status_code == 404
    not_a_number = finish(client, rerun_token, ",ô", state="failed", reason="x")  # type: ignore[arg-type]
    assert not_a_number.status_code == 404 and not_a_number.json()["error"]["code"] == "not_found"
    assert RerunRequest.objects.get(pk=request_id).state == RerunState.CLAIMED


# -- the admin -----------------------------------------------------------------------------------


def test_a_moderator_queues_a_rerun_in_the_admin_and_sees_the_queue(
    moderator: Any, moderator_token: str, rerun_token: str, django_assert_num_queries: Any
) -> None:
    from django.test import Client
    from rest_framework.test import APIClient

    browser = Client()
    browser.force_login(moderator)
    benchmark = Run.objects.filter(benchmark__native_id=K10, source__slug="sol-execbench").first().benchmark
    response = browser.post(
        "/admin/api/rerunrequest/add/",
        {
            "benchmark": benchmark.pk,
            "target": "scoring-baseline",
            "trials": 1,
            "iterations": 20,
            "warmup_seconds": 1,
            "reason": "from the admin",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    queued = RerunRequest.objects.get()
    assert (queued.target, queued.requested_by, queued.trials) == ("scoring-baseline", moderator, 1)
    assert events(queued.pk) == ["rerun_request.requested"]
    # What no worker could run is refused on the form, with the reason.
    k62 = Run.objects.filter(benchmark__native_id=K62).first().benchmark
    refused = browser.post(
        "/admin/api/rerunrequest/add/",
        {"benchmark": k62.pk, "target": "scoring-baseline", "trials": 3, "iterations": 50, "warmup_seconds": 3},
    )
    assert refused.status_code == 200 and "published no scoring baseline" in refused.content.decode()
    assert RerunRequest.objects.count() == 1
    api = APIClient()
    for target in ("reference", "torch-compile"):
        request_rerun(api, moderator_token, target=target)
    claim(api, rerun_token, "gpu-a")
    # session, user, permissions (2), count (2: filtered and total), the page of requests with
    # benchmark, runs and requester joined, the worker filter's values
    with django_assert_num_queries(8):
        page = browser.get("/admin/api/rerunrequest/?state__exact=claimed")
    assert page.status_code == 200
    text = page.content.decode()
    assert "gpu-a" in text and "scoring-baseline" in text
