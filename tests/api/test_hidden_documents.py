"""Issue 10, "hidden means hidden": the implementation and environment documents (project,
submitter, revision, GPU) that only hidden or retracted runs use are not listed in search or in
/api/v1/implementations|environments/, and the lists keep their one query."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from attestations import moderation
from kernelindex import canonical
from runs import selectors
from runs.models import Run
from tests.factories import import_bundles, sol_bundle

pytestmark = pytest.mark.django_db


def bundle(n: int, *, gpu: str, project: str) -> dict[str, Any]:
    b = sol_bundle(submission_id=300000 + n, username=f"team {n}", sol_score=0.5, latency_ms=0.02, gpu=gpu)
    implementation = {
        "apiVersion": canonical.API_VERSION,
        "kind": "Implementation",
        "metadata": {"name": f"impl-{n}"},
        "spec": {"project": project, "submitter": f"team {n}", "revision": f"secret-rev-{n}"},
    }
    b["implementation"] = implementation
    b["run"]["spec"]["implementationDigest"] = canonical.digest_of(implementation)
    return b


@pytest.fixture
def runs(staff: Any) -> tuple[Run, Run]:
    result = import_bundles(
        [bundle(1, gpu="NVIDIA B200", project="open project"), bundle(2, gpu="NVIDIA H20", project="leaky project")]
    )
    shown, hidden = (Run.objects.get(public_id=pid) for pid in result.run_ids)
    return shown, hidden


@pytest.mark.parametrize("action", [moderation.run_hide, moderation.run_retract])
def test_documents_only_hidden_runs_use_are_not_listed(
    client: Any, runs: tuple[Run, Run], staff: Any, action: Any
) -> None:
    shown, hidden = runs
    action(hidden, staff, "withdrawn by its submitter")

    implementations = client.get("/api/v1/implementations/").json()["results"]
    assert [i["revision"] for i in implementations] == ["secret-rev-1"]
    environments = client.get("/api/v1/environments/").json()["results"]
    assert [e["product"] for e in environments] == ["NVIDIA B200"]
    assert client.get(f"/api/v1/implementations/{hidden.implementation.digest}/").status_code == 404
    assert client.get(f"/api/v1/environments/{hidden.environment.digest}/").status_code == 404

    assert selectors.search("leaky")["projects"] == []
    assert selectors.search("H20")["environments"] == []
    assert [p.name for p in selectors.search("open")["projects"]] == ["open project"]
    assert [e.product for e in selectors.search("B200")["environments"]] == ["NVIDIA B200"]
    page = client.get("/search/?q=leaky").content.decode() + client.get("/search/?q=H20").content.decode()
    assert "leaky project" not in page and "NVIDIA H20" not in page

    # Restored, it is listed again.
    moderation.run_restore(hidden, staff, "back")
    assert len(client.get("/api/v1/implementations/").json()["results"]) == 2
    assert [p.name for p in selectors.search("leaky")["projects"]] == ["leaky project"]


def test_a_document_a_visible_run_also_uses_stays_listed(client: Any, staff: Any) -> None:
    # Two runs on one GPU: hiding one leaves the GPU listed.
    result = import_bundles([bundle(1, gpu="NVIDIA B200", project="p"), bundle(3, gpu="NVIDIA B200", project="p")])
    moderation.run_hide(Run.objects.get(public_id=result.run_ids[0]), staff, "spam")
    assert [e["product"] for e in client.get("/api/v1/environments/").json()["results"]] == ["NVIDIA B200"]
    assert [p.name for p in selectors.search("p")["projects"]] == ["p"]


def test_the_lists_stay_one_query(client: Any, runs: tuple[Run, Run], staff: Any) -> None:
    moderation.run_hide(runs[1], staff, "spam")
    for url in ("/api/v1/implementations/", "/api/v1/environments/"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        reads = [q["sql"] for q in queries.captured_queries if "api_apitoken" not in q["sql"]]
        assert len(reads) == 1, reads
        assert "EXISTS" in reads[0]
