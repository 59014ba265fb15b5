"""The main lists read an index on PostgreSQL (EXPLAIN), not the whole runs table.

The test database is small, so the planner would rightly pick a sequential scan and a sort for
it; ``enable_seqscan = off`` and ``enable_sort = off`` ask instead whether an index *can* serve
each query as it is written: look its filter up, or give its order. The test fails when a
query's filter or order matches no index (at a million runs it would read them all).
"""

from __future__ import annotations

import json
import urllib.parse

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.models import Run
from runs.ordering import newest_first
from tests.factories import sol_group

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="EXPLAIN (FORMAT JSON) is PostgreSQL's")


def _nodes(plan: object) -> list[dict]:
    if isinstance(plan, dict):
        found = [plan] if "Node Type" in plan else []
        return found + [node for value in plan.values() for node in _nodes(value)]
    if isinstance(plan, list):
        return [node for value in plan for node in _nodes(value)]
    return []


def _plan(sql: str) -> list[dict]:
    """Every node of the query's plan when sequential scans and sorts are off (a plan keeps
    them only when nothing else can answer the query)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
        cursor.execute("SET LOCAL enable_seqscan = on")
        cursor.execute("SET LOCAL enable_sort = on")
    return _nodes(json.loads(plan) if isinstance(plan, str) else plan)


def _run_queries(client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return [q["sql"] for q in captured.captured_queries if 'FROM "runs_run"' in q["sql"] and "SELECT" in q["sql"]]


def _walk(client, url: str) -> list[str]:
    """The ids of every page of a list, following its next links from ``url``."""
    seen = []
    while url:
        page = client.get(url).json()
        seen.extend(row["id"] for row in page["results"])
        url = page["next"]
    return seen


@postgresql_only
@pytest.mark.django_db
def test_the_main_list_queries_read_an_index(client):
    sol_group(30)
    sol_group(30, kernel="010_attention_value_projection_with_transpose")  # so a filter selects
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE runs_run")
    run = Run.objects.order_by("rank")[10]
    benchmark = urllib.parse.urlencode({"benchmark": run.benchmark.native_id})
    # url → the column an index looks up; None: an unfiltered list, which must come in an
    # index's order (no Sort: a page reads its rows and stops).
    lists = {
        "/": None,  # latest runs
        "/api/v1/runs/": None,  # the API list in its default order (-observedAt)
        "/runs/": None,  # the runs index: a bounded count and its first page, newest first
        f"/environments/{run.environment.digest}/": "environment_id",
        f"/api/v1/runs/?{benchmark}": "benchmark_id",
        f"/api/v1/runs/?source={run.source.slug}": "source_id",  # by id, not through the join
        f"/runs/?source={run.source.slug}": "source_id",
        f"/search/?submitter={urllib.parse.quote(run.submitter)}": "submitter",
        f"/groups/{run.group.key}/": "group_id",  # a group's ranking: its row count and one page
    }
    for url, column in lists.items():
        queries = _run_queries(client, url)
        assert queries, url
        for sql in queries:
            nodes = _plan(sql)
            runs = [node for node in nodes if node.get("Relation Name") == "runs_run"]
            assert runs, sql
            for node in runs:
                assert node["Node Type"] != "Seq Scan", (url, sql)
            # An index scan's Index Cond, or a bitmap heap scan's Recheck Cond (its index's).
            conditions = " ".join(node.get("Index Cond", "") + node.get("Recheck Cond", "") for node in runs)
            looked_up = column is not None and column in conditions
            ordered = not [node for node in nodes if node["Node Type"] == "Sort"]
            # A filtered list looks its rows up in an index, or walks one in the list's order and
            # stops after a page (the planner's choice when, as here, most runs match).
            assert looked_up or ordered, (url, sql)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's own query plans")
@pytest.mark.django_db
def test_newest_first_lists_walk_the_index_on_sqlite(client):
    """SQLite matches an expression index only when the query writes the same expression: a
    bound sentinel (``COALESCE(observed_at, ?)``) made every newest-first list sort the whole
    runs table. runs.ordering.Sentinel writes it into the SQL, so the lists walk run_newest_first."""
    sol_group(30)
    for url in ("/", "/api/v1/runs/", "/runs/"):
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        ordered = [
            q["sql"] for q in captured.captured_queries if 'FROM "runs_run"' in q["sql"] and "ORDER BY" in q["sql"]
        ]
        assert ordered, url
        for sql in ordered:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN QUERY PLAN " + sql)
                plan = " / ".join(str(row[-1]) for row in cursor.fetchall())
            assert "run_newest_first" in plan and "TEMP B-TREE FOR ORDER BY" not in plan, (url, plan)


@postgresql_only
@pytest.mark.django_db
def test_the_groups_list_walks_benchmarks_in_native_id_order(client):
    """The API's groups list (by benchmark native id, then GPU, harness version and key) can read
    benchmarks through benchmark_native_id, so only each benchmark's own groups are sorted
    (Incremental Sort) and a page stops after its rows: sorting every group of the index was
    10 ms a page at 9,354 groups. (SQLite, with the statistics an import gathers, takes the same
    path: "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY".)"""
    sol_group(5)
    sol_group(5, kernel="010_attention_value_projection_with_transpose")
    with CaptureQueriesContext(connection) as captured:
        assert client.get("/api/v1/groups/").status_code == 200
    (sql,) = [q["sql"] for q in captured.captured_queries if 'FROM "runs_comparisongroup"' in q["sql"]]
    nodes = _plan(sql)
    scans = [node for node in nodes if node.get("Relation Name") == "runs_benchmark"]
    assert [node.get("Index Name") for node in scans] == ["benchmark_native_id"], scans
    assert not [node for node in nodes if node["Node Type"] == "Sort"], nodes


@pytest.mark.django_db
def test_a_sources_submitters_are_counted_from_the_source_submitter_index():
    """runs.counts counts a source's distinct submitters one index descent per submitter (a
    COUNT(DISTINCT) read all the source's runs: 1.4 s at 1,000,000): each step of that query reads
    an index in submitter order and stops at its first row, no scan or sort of the runs. (At a
    million runs PostgreSQL reads run_source_submitter; on a test database this small it may
    take run_submitter_observed, as good for one source.) SQLite names run_source_submitter."""
    from runs import counts

    sol_group(30)
    run = Run.objects.filter(is_reference=False).first()
    with CaptureQueriesContext(connection) as captured:
        figures = counts.source_submitter_counts([run.source_id])
    expected = Run.objects.filter(source=run.source_id, visibility="published", is_reference=False)
    assert figures == {run.source_id: {"submitter_count": expected.values("submitter").distinct().count()}}
    (sql,) = [q["sql"] for q in captured.captured_queries if "WITH RECURSIVE" in q["sql"]]
    if connection.vendor == "postgresql":
        # Planned without sequential scans (the statistics inside an import are stale), and
        # the transaction's settings are as they were afterwards.
        assert "set_config('enable_seqscan', 'off', true)" in captured.captured_queries[0]["sql"]
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('enable_seqscan'), current_setting('enable_sort')")
            assert cursor.fetchone() == ("on", "on")
        nodes = _plan(sql)
        runs = [node for node in nodes if node.get("Relation Name") == "runs_run"]
        assert runs and all(node["Node Type"] in ("Index Scan", "Index Only Scan") for node in runs), runs
        assert not [node for node in nodes if node["Node Type"] == "Sort"], nodes
    else:
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plan = [str(row[-1]) for row in cursor.fetchall()]
        reads = [step for step in plan if "runs_run" in step or step.startswith(("SEARCH r", "SCAN r"))]
        assert reads and all("run_source_submitter" in step for step in reads), plan


@postgresql_only
@pytest.mark.django_db
def test_rare_filter_values_and_several_ids_look_their_runs_up(client):
    """A filter value few runs have (failed, reruns, unranked, an early bound on observedAt) and a
    filter naming several environments or sources (an architecture, a benchmark source) look
    their runs up in an index, instead of walking the newest-first index until a page is full
    (at 1,000,000 runs those walks took 0.4-3.0 s)."""
    sol_group(30)
    sol_group(30, stack="v1.0", status="failed", observed_at="2025-01-02T03:04:05Z")
    Run.objects.filter(status="failed").update(evidence_level="kernelindex_rerun", rank=None)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE runs_run")
    architecture = Run.objects.first().environment.architecture
    assert Run.objects.filter(environment__architecture=architecture).values("environment").distinct().count() == 2
    # By its sources (here one), not by its benchmarks' ids (api.filters.BenchmarkSourceFilter):
    # the source's newest-first index, looked up or walked in order (as the lists above).
    sql = _run_queries(client, "/api/v1/runs/?benchmarkSource=sol-execbench")[-1]
    assert '"runs_run"."source_id" = ' in sql, sql
    assert all(node["Node Type"] not in ("Seq Scan", "Sort") for node in _plan(sql)), sql
    # Read id by id (api.pagination.merged): a page of each id's runs, each from the index that
    # leads with the column (which of two sort-free plans a table this small gets is the
    # planner's guess; at a million runs it is that index: bench/pages.py).
    sql = _run_queries(client, f"/api/v1/runs/?architecture={architecture}")[-1]
    assert "CROSS JOIN LATERAL" in sql and '"runs_run"."environment_id" = ("merge_ids"."id")' in sql, sql
    assert all(node["Node Type"] != "Seq Scan" for node in _plan(sql) if node.get("Relation Name") == "runs_run")
    # With a benchmark too, by the benchmark (api.filters.merge_by): its runs, not each GPU's.
    benchmark = Run.objects.first().benchmark.native_id
    sql = _run_queries(client, f"/api/v1/runs/?architecture={architecture}&benchmark={benchmark}")[-1]
    assert "CROSS JOIN LATERAL" in sql and '"runs_run"."benchmark_id" = ("merge_ids"."id")' in sql, sql
    assert all(node["Node Type"] != "Seq Scan" for node in _plan(sql) if node.get("Relation Name") == "runs_run")
    # A harness version of few runs: read group by group (api.filters.GroupColumnFilter), not by
    # a join to the groups that walked the newest-first index past every other run.
    sql = _run_queries(client, "/api/v1/runs/?harnessVersion=v1.0")[-1]
    assert "CROSS JOIN LATERAL" in sql and '"runs_run"."group_id" = ("merge_ids"."id")' in sql, sql
    assert all(node["Node Type"] != "Seq Scan" for node in _plan(sql) if node.get("Relation Name") == "runs_run")
    # An early bound on observedAt is a range of the newest-first index, not a filter on its walk.
    sql = _run_queries(client, "/api/v1/runs/?observedBefore=2025-06-01")[-1]
    conditions = " ".join(node.get("Index Cond", "") for node in _plan(sql) if node.get("Relation Name") == "runs_run")
    assert "observed_at" in conditions, (sql, conditions)
    # The rare values: each list's rows (the last query; on /runs/ after the bounded count) come
    # in order from the partial index of those runs. Here half the runs have them, so the planner
    # may as well walk the newest-first index; without it, only the partial index gives the order.
    rare = {
        "/runs/?status=failed": "run_rare_status_observed",
        "/api/v1/runs/?status=failed": "run_rare_status_observed",
        "/runs/?evidence=kernelindex_rerun": "run_rare_evidence_observed",
        "/api/v1/runs/?evidenceLevel=kernelindex_rerun": "run_rare_evidence_observed",
        "/api/v1/runs/?ranked=false": "run_unranked_observed",
    }
    queries = {url: _run_queries(client, url)[-1] for url in rare}
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX run_newest_first")  # undone with the test's transaction
    for url, index in rare.items():
        runs = [node for node in _plan(queries[url]) if node.get("Relation Name") == "runs_run"]
        assert runs and all(node["Node Type"] != "Seq Scan" for node in runs), (url, runs)
        assert index in {node.get("Index Name") for node in runs}, (url, runs)
        assert not [node for node in _plan(queries[url]) if node["Node Type"] == "Sort"], url


@pytest.mark.django_db
def test_a_list_filtered_by_several_environments_pages_as_the_plain_filter_does(client):
    """The merged read (api.pagination.merged) gives the rows, pages and cursors the plain
    filter gives: every run of both environments, newest first, each once, forward and back."""
    sol_group(30)
    sol_group(20, stack="v1.0", observed_at="2025-01-02T03:04:05Z")
    sol_group(10, stack="v0.9", kernel="010_attention_value_projection_with_transpose")
    architecture = Run.objects.first().environment.architecture
    expected = list(
        Run.objects.filter(environment__architecture=architecture, visibility="published")
        .order_by(*newest_first())
        .values_list("public_id", flat=True)
    )
    assert Run.objects.values("environment").distinct().count() == 3 and len(expected) == 60
    seen, url = [], f"/api/v1/runs/?architecture={architecture}&limit=7"
    while url:
        page = client.get(url).json()
        seen.extend(row["id"] for row in page["results"])
        url, back = page["next"], page["previous"]
    assert seen == expected
    page = client.get(back).json()  # the last page's previous link: the page before it
    last = len(expected) % 7 or 7
    assert [row["id"] for row in page["results"]] == expected[-last - 7 : -last]


@pytest.mark.django_db
@pytest.mark.parametrize("few", [5000, 0], ids=["group by group", "by their sources"])
def test_a_list_filtered_by_a_group_column_pages_as_the_plain_filter_does(client, monkeypatch, few):
    """?harness= and ?harnessVersion= (api.filters.GroupColumnFilter) give what a filter through
    the join gives, whether the runs are read group by group or from their sources' indexes."""
    from api.filters import GroupColumnFilter
    from runs.models import ComparisonGroup

    monkeypatch.setattr(GroupColumnFilter, "FEW", few)
    sol_group(30)
    sol_group(20, stack="v1.0", observed_at="2025-01-02T03:04:05Z")
    sol_group(10, stack="v0.9", kernel="010_attention_value_projection_with_transpose")
    harness = ComparisonGroup.objects.values_list("harness_name", flat=True).distinct().get()
    for query, plain, count in [
        ({"harness": harness}, {"group__harness_name": harness}, 60),
        ({"harnessVersion": "v1.0"}, {"group__harness_version": "v1.0"}, 20),
    ]:
        expected = list(
            Run.objects.filter(visibility="published", **plain)
            .order_by(*newest_first())
            .values_list("public_id", flat=True)
        )
        assert len(expected) == count
        assert _walk(client, f"/api/v1/runs/?{urllib.parse.urlencode(query)}&limit=7") == expected, query
    assert client.get("/api/v1/runs/?harness=none+such").json()["results"] == []


@pytest.mark.django_db
def test_a_list_filtered_by_a_benchmark_and_several_environments_pages_as_the_plain_filter_does(client):
    """Read by the benchmark (api.filters.merge_by), whichever filter comes first in the query: the
    rows and pages the plain filter gives. A filter that names nothing gives an empty list, also
    when another names several environments (that was a 500: the merged read of nothing)."""
    sol_group(30)
    sol_group(20, stack="v1.0", observed_at="2025-01-02T03:04:05Z")
    sol_group(10, stack="v0.9", kernel="010_attention_value_projection_with_transpose")
    architecture = Run.objects.first().environment.architecture
    benchmark = Run.objects.filter(benchmark__native_id__startswith="062").first().benchmark.native_id
    expected = list(
        Run.objects.filter(
            environment__architecture=architecture, benchmark__native_id=benchmark, visibility="published"
        )
        .order_by(*newest_first())
        .values_list("public_id", flat=True)
    )
    assert len(expected) == 50
    for query in (
        f"architecture={architecture}&benchmark={benchmark}",
        f"benchmark={benchmark}&architecture={architecture}",
    ):
        assert _walk(client, f"/api/v1/runs/?{query}&limit=7") == expected, query
    for query in (f"architecture={architecture}&benchmark=none_such", f"architecture={architecture}&gpu=none+such"):
        response = client.get(f"/api/v1/runs/?{query}")
        assert response.status_code == 200 and response.json()["results"] == [], query
