"""POST /runs/{id}/attestations/ and /reports/: the forms' validation, moderation queue and limits."""

from __future__ import annotations

from typing import Any

import pytest

from attestations import moderation
from attestations.models import Attestation, AttestationState, IssueReport, ReportState
from runs.models import Run, Visibility
from tests.api.conftest import auth
from tests.factories import import_bundles, reference_bundle

pytestmark = pytest.mark.django_db

REPRODUCTION = {
    "kind": "reproduction",
    "measuredValue": 18.9,
    "measuredUnit": "µs",
    "measuredStatistic": "mean",
    "casesReproduced": 16,
    "casesMatched": 16,
    "gpuProduct": "NVIDIA B200",
    "command": "python -m sol_execbench.eval --kernel 62",
}


@pytest.fixture
def run() -> Run:
    import_bundles([reference_bundle()])
    return Run.objects.get()


def test_a_reproduction_waits_for_a_moderator(client: Any, run: Run, staff: Any) -> None:
    response = client.post(f"/api/v1/runs/{run.public_id}/attestations/", REPRODUCTION, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["state"] == "pending" and body["run"] == run.public_id
    attestation = Attestation.objects.get(reference=body["reference"])
    assert attestation.state == AttestationState.PENDING
    assert attestation.measured_value == 18.9 and attestation.measured_unit == "µs"
    assert attestation.client_key.startswith("c:")
    assert client.get("/api/v1/attestations/").json()["results"] == []
    moderation.attestation_approve(attestation=attestation, actor=staff)
    listed = client.get("/api/v1/attestations/", {"run": run.public_id}).json()["results"]
    assert [a["reference"] for a in listed] == [body["reference"]]
    assert listed[0]["measurement"] == {"value": 18.9, "unit": "µs", "statistic": "mean"}
    # Never changes the run's evidence level.
    assert client.get(f"/api/v1/runs/{run.public_id}/").json()["evidenceLevel"] == "source_reported"


def test_a_token_client_is_the_author(client: Any, run: Run, alice_token: str) -> None:
    note = {"kind": "note", "text": "The same kernel runs 2% slower with CUDA 12.8."}
    response = client.post(f"/api/v1/runs/{run.public_id}/attestations/", note, format="json", **auth(alice_token))
    assert response.status_code == 201
    assert Attestation.objects.get().author.username == "alice"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**REPRODUCTION, "measuredValue": -1}, "measuredValue"),
        ({**REPRODUCTION, "casesMatched": 17}, "casesMatched"),
        ({**REPRODUCTION, "measuredUnit": "fortnights"}, "measuredUnit"),
        ({"kind": "note"}, "text"),
        ({"kind": "opinion"}, "kind"),
        ({**REPRODUCTION, "link": "javascript:alert(1)"}, "link"),
        ({**REPRODUCTION, "text": ["a", "list"]}, "text"),
        ({**REPRODUCTION, "website": "spam"}, "website"),
    ],
)
def test_invalid_attestations_name_the_field(client: Any, run: Run, body: dict, field: str) -> None:
    response = client.post(f"/api/v1/runs/{run.public_id}/attestations/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert not Attestation.objects.exists()


def test_a_report_reaches_the_moderators_queue(client: Any, run: Run) -> None:
    body = {"category": "incorrect_data", "description": "The latency does not match the board's CSV export."}
    response = client.post(f"/api/v1/runs/{run.public_id}/reports/", body, format="json")
    assert response.status_code == 201
    report = IssueReport.objects.get(reference=response.json()["reference"])
    assert report.state == ReportState.OPEN and report in IssueReport.objects.open()


def test_a_short_report_is_refused(client: Any, run: Run) -> None:
    response = client.post(
        f"/api/v1/runs/{run.public_id}/reports/", {"category": "other", "description": "bad"}, format="json"
    )
    assert response.status_code == 400 and response.json()["error"]["field"] == "description"


def test_tombstones_take_no_posts(client: Any, run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(visibility=Visibility.HIDDEN)
    response = client.post(f"/api/v1/runs/{run.public_id}/attestations/", REPRODUCTION, format="json")
    assert response.status_code == 404
    assert client.post("/api/v1/runs/ffffffff/reports/", {}, format="json").status_code == 404


def test_anonymous_posts_share_the_forms_rate_limit(client: Any, run: Run, settings: Any) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 2
    # One budget per client, across the API and the web form.
    web = client.post(
        f"/runs/{run.public_id}/report/", {"category": "other", "description": "Posted from the web form."}
    )
    assert web.status_code in {302, 200}
    note = {"kind": "note", "text": "A note."}
    assert client.post(f"/api/v1/runs/{run.public_id}/attestations/", note, format="json").status_code == 201
    limited = client.post(f"/api/v1/runs/{run.public_id}/attestations/", note, format="json")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "throttled" and int(limited["Retry-After"]) > 0
    assert Attestation.objects.count() == 1
    # Another client has its own budget.
    other = client.post(f"/api/v1/runs/{run.public_id}/attestations/", note, format="json", REMOTE_ADDR="10.1.2.3")
    assert other.status_code == 201
