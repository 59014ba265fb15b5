"""The run page's and the project page's "History" (RunRevision rows), and published flags on
the ranking page."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from attestations.models import IssueReport, ReportState
from kernelindex import canonical
from runs.models import Run, RunRevision
from tests.factories import import_bundles, sol_bundle
from tests.web.pages import visible_text

XSS = '<script>alert("h8")</script>'


def tilegym_bundle(*, sol_score: float, latency_ms: float) -> dict[str, Any]:
    """A run of the TileGym project (with its implementation document), numbers per revision."""
    bundle = sol_bundle(
        submission_id=27772, username="TH3CHARLie | TileGym", sol_score=sol_score, latency_ms=latency_ms
    )
    bundle["implementation"] = {
        "apiVersion": canonical.API_VERSION,
        "kind": "Implementation",
        "metadata": {"name": "tilegym-27772"},
        "spec": {"project": "TileGym", "submitter": "TH3CHARLie | TileGym", "revision": "submission-27772"},
    }
    bundle["run"]["spec"]["implementationDigest"] = canonical.digest_of(bundle["implementation"])
    return bundle


@pytest.fixture
def revised_run(db: Any) -> Run:
    """One run recorded three times: the import, a corrected board, an API resubmission."""
    import_bundles([tilegym_bundle(sol_score=0.95, latency_ms=0.0190)], actor_label="import: kernel-62.json")
    import_bundles(
        [tilegym_bundle(sol_score=0.96, latency_ms=0.0190)],
        actor_label="import: kernel-62-corrected.json",
        reason="source corrected its score",
    )
    later = copy.deepcopy(tilegym_bundle(sol_score=0.96, latency_ms=0.0186))
    later["run"]["spec"]["observedAt"] = "2026-07-25T10:00:00.000Z"
    import_bundles([later], actor_label="api: alice (token kit_7ZCKHMr9…)", reason=f"resubmitted {XSS}")
    run = Run.objects.get()
    assert run.revision == 3
    return run


def history_text(body: str) -> str:
    return visible_text(body.split('<h2 id="history-h">')[1].split("</section>")[0])


def test_the_run_page_shows_who_changed_the_record_what_and_why(client: Any, revised_run: Run) -> None:
    body = client.get(f"/runs/{revised_run.public_id}/").content.decode()
    text = history_text(body)
    assert "History Revisions of this record, newest first" in text
    rows = body.split('<section id="history"')[1].split("</table>")[0].split("<tr>")[2:]
    assert [visible_text(row).split(" ")[0] for row in rows] == ["3", "2", "1"]
    # newest first: number, date, actor, reason, changed fields (sorted on every database)
    assert "api: alice resubmitted" in text and "avg_speedup, digest, latency_ns, observed_at 2 " in text
    assert "import: kernel-62-corrected.json source corrected its score digest, sol_score 1 " in text
    assert text.endswith("import: kernel-62.json imported first recorded")
    # The token an API submission came with is not published; the reason is escaped.
    assert "kit_7ZCKHMr9" not in body and "(token" not in text
    assert XSS not in body and "&lt;script&gt;alert(&quot;h8&quot;)&lt;/script&gt;" in body


def test_only_the_latest_revisions_are_shown_and_the_page_says_how_many_there_are(
    client: Any, revised_run: Run, django_assert_num_queries: Any
) -> None:
    latest = RunRevision.objects.get(run=revised_run, number=3)
    RunRevision.objects.bulk_create(
        [
            RunRevision(
                run=revised_run,
                number=number,
                digest=latest.digest,
                document=latest.document,
                actor_label="import: board.json",
                reason=f"re-import {number}",
            )
            for number in range(4, 26)
        ]
    )
    Run.objects.filter(pk=revised_run.pk).update(revision=25)
    # run (with whether it has published attestations and flags: none), latest revisions
    with django_assert_num_queries(2):
        body = client.get(f"/runs/{revised_run.public_id}/").content.decode()
    text = history_text(body)
    assert "(the latest 20 of 25)" in text
    assert "re-import 25" in text and "re-import 6" in text and "re-import 5" not in text


def test_the_project_page_lists_the_latest_changes_of_its_runs(client: Any, revised_run: Run) -> None:
    project = revised_run.implementation.project
    body = client.get(project.get_absolute_url()).content.decode()
    text = history_text(body)
    assert "Latest changes to the records of this project's runs, newest first" in text
    assert f'href="/runs/{revised_run.public_id}/"' in body.split('<section id="history"')[1]
    assert text.count(revised_run.public_id) == 3
    assert "source corrected its score" in text and "kit_7ZCKHMr9" not in body


def test_a_hidden_run_keeps_its_history_off_its_tombstone_and_its_project_page(client: Any, revised_run: Run) -> None:
    Run.objects.filter(pk=revised_run.pk).update(visibility="hidden", public_reason="Published by mistake.")
    tombstone = client.get(f"/runs/{revised_run.public_id}/")
    assert tombstone.status_code == 410 and "History" not in tombstone.content.decode()
    body = client.get(revised_run.implementation.project.get_absolute_url()).content.decode()
    assert "No recorded changes." in history_text(body)


def test_the_ranking_page_shows_published_flags_with_their_summary_only(client: Any, revised_run: Run) -> None:
    IssueReport.objects.create(
        run=revised_run,
        reference="R-H8-1",
        category="exploit",
        description="PRIVATE DESCRIPTION",
        contact_email="reporter@example.invalid",
        state=ReportState.FLAGGED,
        public_summary=f"Timing window exploited {XSS}",
    )
    IssueReport.objects.create(
        run=revised_run, reference="R-H8-2", category="other", description="PRIVATE OPEN", state=ReportState.OPEN
    )
    body = client.get(revised_run.group.get_absolute_url()).content.decode()
    text = visible_text(body)
    assert "⚑ flagged Suspected reward hack or exploit: Timing window exploited" in text
    assert f'href="/runs/{revised_run.public_id}/#replications"' in body
    assert "PRIVATE" not in body and "reporter@example.invalid" not in body
    assert XSS not in body
    # A flag is a note: the run keeps its rank.
    assert Run.objects.get(pk=revised_run.pk).rank == 1
