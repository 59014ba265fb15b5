"""Every page's query count, pinned, the same with 10 and with 1,000 runs in a group.

Run page ≤ 8 and ranking page ≤ 5 are the issue's budgets; the exact counts below are what
the pages cost today (each view's docstring lists its queries).
"""

from __future__ import annotations

import pytest

from kernelindex.pagecache import bump_data_version
from runs.models import Environment, Implementation, Project, Run, Visibility
from tests.factories import sol_group


@pytest.fixture(params=[10, 1000], ids=["10-runs", "1000-runs"])
def group_runs(request, db) -> list[Run]:
    sol_group(request.param)
    runs = list(Run.objects.order_by("rank"))
    assert len(runs) == request.param
    project = Project.objects.create(slug="tilegym", name="TH3CHARLie | TileGym")
    implementation = Implementation.objects.create(
        digest="sha256:" + "a" * 64, document="{}", project=project, submitter="TH3CHARLie | TileGym", revision="r1"
    )
    Run.objects.update(implementation=implementation)
    return runs


def pages(runs: list[Run]) -> list[tuple[str, int, int]]:
    """(url, queries, expected status)."""
    middle = runs[len(runs) // 2]
    group = middle.group
    environment = Environment.objects.get()
    return [
        # run (and whether it has published attestations or flags: none here), latest revisions
        (f"/runs/{middle.public_id}/", 2, 200),
        (f"/runs/{runs[0].public_id}/", 2, 200),
        # run with its documents
        (f"/runs/{middle.public_id}.json", 1, 200),
        # group (and whether it has published flags: none here), one page of rows (the row
        # count is stored) …
        (f"/groups/{group.key}/", 2, 200),
        (f"/groups/{group.key}/?show=all&sort=-latency&page=2", 2, 200),
        (f"/groups/{group.key}/?sort=submitter", 2, 200),
        # … and with an evidence filter, the row count
        (f"/groups/{group.key}/?evidence=source_reported", 3, 200),
        # the run, the run it is compared with
        (f"/runs/{middle.public_id}/compare/", 2, 200),
        (f"/runs/{middle.public_id}/compare/{runs[-1].public_id}/", 2, 200),
        (f"/runs/{middle.public_id}/cite/", 1, 200),
        # benchmark, its groups with counts, top runs of every group, the metric values of all
        # their runs (values only, for the best-over-time and distribution charts)
        ("/benchmarks/sol-execbench/062_kv_cache_update_with_rope_backward/", 4, 200),
        # sources, most-run benchmarks, latest runs
        ("/", 3, 200),
        # source, benchmark count, benchmark page, latest runs
        ("/sources/sol-execbench/", 4, 200),
        # project, revisions, latest record changes of its runs, GPUs and sources (filter
        # options), run count, run page
        ("/projects/tilegym/", 7, 200),
        # (and the GPU's environments)
        ("/projects/tilegym/?gpu=b200&evidence=source_reported&sort=-latency&page=2", 8, 200),
        # environment, sources (filter options), run page: its stored figure is the count
        (f"/environments/{environment.digest}/", 3, 200),
        # environment, sources (filter options), run count, run page
        (f"/environments/{environment.digest}/?source=sol-execbench&sort=-latency", 4, 200),
        # benchmarks, submitters, projects, GPUs
        ("/search/?q=kv+cache", 4, 200),
        ("/search/?q=submitter", 4, 200),
        ("/search/", 0, 200),
        # GPUs and sources (filter options), run count and page of one submitter's runs, plus
        # the four searches (q is empty: none)
        (f"/search/?submitter={middle.submitter.replace(' ', '+').replace('|', '%7C')}", 4, 200),
        ("/runs/0000beef/", 1, 404),
    ]


def test_it_pins_the_query_count_of_every_page(client, group_runs, django_assert_num_queries):
    for url, queries, status in pages(group_runs):
        with django_assert_num_queries(queries):
            response = client.get(url)
        assert response.status_code == status, url


def test_the_run_and_ranking_pages_stay_within_budget(client, group_runs, django_assert_max_num_queries):
    run = group_runs[len(group_runs) // 2]
    with django_assert_max_num_queries(8):
        assert client.get(f"/runs/{run.public_id}/").status_code == 200
    with django_assert_max_num_queries(5):
        assert client.get(f"/groups/{run.group.key}/?show=all").status_code == 200


def test_a_tombstone_costs_one_query(client, group_runs, django_assert_num_queries):
    run = group_runs[0]
    Run.objects.filter(pk=run.pk).update(visibility=Visibility.RETRACTED, public_reason="Withdrawn by the source.")
    with django_assert_num_queries(1):
        assert client.get(f"/runs/{run.public_id}/").status_code == 410
    with django_assert_num_queries(1):
        assert client.get(f"/runs/{run.public_id}.json").status_code == 410


def test_long_lists_are_paginated(client, group_runs):
    group = group_runs[0].group
    body = client.get(f"/groups/{group.key}/?show=all").content.decode()
    from runs.selectors import PAGE_SIZE

    shown = body.count('<tr class="')
    assert shown == min(len(group_runs), PAGE_SIZE)
    if len(group_runs) > PAGE_SIZE:
        assert f"page 1 of {-(-len(group_runs) // PAGE_SIZE)}" in body and 'rel="next"' in body


def test_attestations_and_flags_cost_no_query_per_item(client, group_runs, django_assert_num_queries):
    from attestations.models import Attestation, AttestationKind, AttestationState, IssueReport, ReportState

    run = group_runs[len(group_runs) // 2]
    for i in range(5):
        Attestation.objects.create(
            run=run,
            kind=AttestationKind.REPRODUCTION,
            state=AttestationState.PUBLISHED,
            digest=f"sha256:{i:064x}",
            reference=f"A-QUERIES-{i}",
            document="{}",
            measured_value=20.1 + i,
            measured_unit="us",
            measured_statistic="mean",
            cases_reproduced=16,
            cases_matched=16,
        )
        IssueReport.objects.create(
            run=run,
            reference=f"R-QUERIES-{i}",
            category="incorrect_data",
            description="private",
            state=ReportState.FLAGGED,
            public_summary=f"Flag {i}",
        )
    # run, published attestations, published flags, latest revisions
    with django_assert_num_queries(4):
        body = client.get(f"/runs/{run.public_id}/").content.decode()
    assert body.count("reviewed by moderators") == 5 and "Flag 4" in body


def _publish_flag(run: Run) -> None:
    """A flag published on ``run``: written here without the moderation console, which tells the
    page cache itself."""
    from attestations.models import IssueReport, ReportState

    IssueReport.objects.create(
        run=run,
        reference="R-FLAG",
        category="incorrect_data",
        description="private",
        state=ReportState.FLAGGED,
        public_summary="Numbers differ from the board",
    )
    bump_data_version()


def test_a_run_page_asks_for_attestations_and_flags_only_where_the_run_has_published_ones(
    client, group_runs, django_assert_num_queries
):
    from attestations.models import Attestation, AttestationKind, AttestationState, IssueReport, ReportState

    def note(run: Run, state: str, text: str) -> None:
        Attestation.objects.create(
            run=run,
            kind=AttestationKind.NOTE,
            state=state,
            digest=f"sha256:{run.pk:064x}",
            reference=f"A-{run.pk}",
            document="{}",
            text=text,
        )

    run, other = group_runs[1], group_runs[2]
    # Unpublished ones (pending, an open report, a flag without a public summary) are not shown,
    # and do not cost their queries.
    note(run, AttestationState.PENDING, "pending note")
    IssueReport.objects.create(run=run, reference="R-OPEN", category="incorrect_data", description="private")
    IssueReport.objects.create(
        run=run, reference="R-QUIET", category="incorrect_data", description="private", state=ReportState.FLAGGED
    )
    with django_assert_num_queries(2):
        body = client.get(f"/runs/{run.public_id}/").content.decode()
    assert "No attestations yet." in body and "Flagged by moderators" not in body and "pending note" not in body
    # A published flag alone: run, flags, revisions.
    _publish_flag(run)
    with django_assert_num_queries(3):
        body = client.get(f"/runs/{run.public_id}/").content.decode()
    assert "Numbers differ from the board" in body and "No attestations yet." in body
    # A published note alone, on another run: run, attestations, revisions.
    note(other, AttestationState.PUBLISHED, "ran it again, same figure")
    bump_data_version()
    with django_assert_num_queries(3):
        body = client.get(f"/runs/{other.public_id}/").content.decode()
    assert "ran it again, same figure" in body and "Flagged by moderators" not in body


def test_flags_on_the_ranking_page_cost_one_query_for_the_whole_group(client, group_runs, django_assert_num_queries):
    from attestations.models import IssueReport, ReportState

    # Flags on ten runs of the first page (two on one of them), and a report still open.
    flagged = group_runs[:10]
    for i, run in enumerate(flagged):
        IssueReport.objects.create(
            run=run,
            reference=f"R-RANK-{i}",
            category="correctness",
            description="private",
            state=ReportState.FLAGGED,
            public_summary=f"Ranking flag {i}",
        )
    IssueReport.objects.create(
        run=flagged[0],
        reference="R-RANK-X",
        category="other",
        description="private",
        state=ReportState.FLAGGED,
        public_summary="Second flag on the leader",
    )
    IssueReport.objects.create(run=flagged[1], reference="R-RANK-OPEN", category="other", description="private")
    group = flagged[0].group
    # group, one page of rows, the group's published flags
    with django_assert_num_queries(3):
        body = client.get(f"/groups/{group.key}/").content.decode()
    assert body.count("⚑ flagged") == 11
    assert all(f"Ranking flag {i}" in body for i in range(10)) and "Second flag on the leader" in body
    assert "private" not in body.split("<caption>")[1]
    with django_assert_num_queries(3):
        assert client.get(f"/groups/{group.key}/?show=all&sort=-latency").status_code == 200


def test_a_ranking_page_asks_for_flags_only_where_its_group_has_published_ones(
    client, group_runs, django_assert_num_queries
):
    from attestations.models import IssueReport

    run = group_runs[0]
    page = f"/groups/{run.group.key}/"
    IssueReport.objects.create(run=run, reference="R-OPEN", category="incorrect_data", description="private")
    with django_assert_num_queries(2):
        body = client.get(page).content.decode()
    assert "flagged" not in body
    _publish_flag(run)
    # group, rows, the group's published flags
    with django_assert_num_queries(3):
        body = client.get(page).content.decode()
    assert "Numbers differ from the board" in body
