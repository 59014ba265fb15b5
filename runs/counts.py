"""Figures kept at write time: how many published runs (and submitters, benchmarks, GPUs) each
comparison group, benchmark, source and project has, and when its latest run was observed.

The home page, the index pages (benchmarks, GPUs, sources, projects), benchmark pages, search and
the API show them; computing them per request is a COUNT over the runs table (seconds at a
million runs). Every write that can change one (an import, a moderation action) already
recomputes the ranks of the groups it touched through ``runs.ranking.recompute_groups``, and that
calls ``refresh`` with the same groups.

What is stored where (published runs only; "submitters" leaves reference rows out):

- ComparisonGroup: ``published_runs``, ``reference_runs`` (its ranking page's row count is
  ``ranked_count`` plus these), ``last_observed_at``.
- Benchmark: ``published_runs``, ``submitter_count``, ``last_observed_at``.
- Source: ``published_runs``, ``benchmark_count``, ``submitter_count``, ``gpu_count``,
  ``last_observed_at``.
- Project: ``published_runs``, ``benchmark_count``, ``revision_count``, ``last_observed_at``.
- Environment: ``published_runs``.

A GPU is not a row: the GPU pages sum the groups' figures (a few thousand groups, not a million
runs). ``refresh_all`` recomputes everything (the migration that added the figures, and
``manage.py recount`` after a repair by hand).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Q, Sum

from runs.bulk import index_reads_only, update_rows

# Each kind's stored figures and their value when it has no published run.
GROUP_FIGURES = {"published_runs": 0, "reference_runs": 0, "last_observed_at": None}
BENCHMARK_FIGURES = {"published_runs": 0, "submitter_count": 0, "last_observed_at": None}
SOURCE_FIGURES = {
    "published_runs": 0,
    "benchmark_count": 0,
    "submitter_count": 0,
    "gpu_count": 0,
    "last_observed_at": None,
}
ENVIRONMENT_FIGURES = {"published_runs": 0}
PROJECT_FIGURES = {"published_runs": 0, "benchmark_count": 0, "revision_count": 0, "last_observed_at": None}


def _models(apps: Any = None) -> dict[str, Any]:
    names = ("Benchmark", "ComparisonGroup", "Environment", "Implementation", "Project", "Run", "Source")
    if apps is not None:  # a migration's historical models
        return {name: apps.get_model("runs", name) for name in names}
    from runs import models

    return {name: getattr(models, name) for name in names}


def refresh(group_ids: Iterable[int], apps: Any = None, run_ids: Iterable[int] | None = None) -> None:
    """Recompute the figures of these groups, then of their benchmarks, sources, environments
    and projects.

    One grouped query over the touched groups' runs (an index range, or one scan whatever the
    planner's statistics say), sums over the groups for benchmarks and sources, distinct
    submitters over the touched benchmarks' runs and, one index descent per submitter, the
    sources', and an update of the rows whose figures changed. A correlated subquery per group
    took minutes on PostgreSQL when the runs table's statistics were stale (a fresh import
    inside one transaction).

    ``run_ids``, when the writer knows them (a moderation action changes one run), are the runs
    that changed: only their environments and projects are recounted, not those of every run of
    their groups (at 1,000,000 runs, one group's 1,000 runs named 1,000 projects: 1.3 s).
    """
    m = _models(apps)
    Run, ComparisonGroup = m["Run"], m["ComparisonGroup"]
    group_ids = sorted(set(group_ids))
    if not group_ids:
        return
    published = Run.objects.filter(visibility="published").order_by()
    in_groups = published.filter(group_id__any=group_ids)
    figures = {
        row["group_id"]: {
            "published_runs": row["n"],
            "reference_runs": row["references"],
            "last_observed_at": row["last"],
        }
        for row in in_groups.values("group_id").annotate(
            n=Count("pk"), references=Count("pk", filter=Q(is_reference=True)), last=Max("observed_at")
        )
    }
    groups = list(
        ComparisonGroup.objects.filter(pk__any=group_ids).only("pk", "benchmark_id", "source_id", *GROUP_FIGURES)
    )
    _store(ComparisonGroup, groups, figures, dict(GROUP_FIGURES))

    benchmark_ids = {group.benchmark_id for group in groups}
    source_ids = {group.source_id for group in groups}
    all_groups = ComparisonGroup.objects.order_by()

    def benchmark_submitters(ids: set[int]) -> dict[int, dict[str, Any]]:
        runs = published.filter(is_reference=False, benchmark_id__in=ids).values("benchmark_id")
        return _rows(runs, submitter_count=Count("submitter", distinct=True))

    # Benchmarks and sources: sums over their groups and distinct submitters over their runs (a
    # source's, one index descent per submitter); a source also counts the benchmarks and GPUs
    # of its groups that have published runs.
    for model, field, ids, figures_of, submitter_counts in (
        (m["Benchmark"], "benchmark_id", benchmark_ids, BENCHMARK_FIGURES, benchmark_submitters),
        (m["Source"], "source_id", source_ids, SOURCE_FIGURES, lambda ids: source_submitter_counts(ids, apps)),
    ):
        mine = {f"{field}__in": ids}
        figures = _rows(
            all_groups.filter(**mine).values(field),
            published_runs=Sum("published_runs"),
            last_observed_at=Max("last_observed_at"),
        )
        _merge(figures, submitter_counts(ids))
        if "gpu_count" in figures_of:
            live = all_groups.filter(**mine, published_runs__gt=0).values(field)
            _merge(
                figures,
                _rows(
                    live,
                    benchmark_count=Count("benchmark_id", distinct=True),
                    gpu_count=Count("hardware_product", distinct=True),
                ),
            )
        rows = list(model.objects.filter(pk__any=ids).only("pk", *figures_of))
        _store(model, rows, figures, dict(figures_of))

    # The environments and projects of the changed runs, or of the touched groups' runs, in one
    # pass over them.
    changed = Run.objects.filter(group_id__any=group_ids) if run_ids is None else Run.objects.filter(pk__any=run_ids)
    pairs = set(changed.order_by().values_list("environment_id", "implementation__project_id").distinct())
    environment_ids = {environment_id for environment_id, _ in pairs}
    project_ids = {project_id for _, project_id in pairs if project_id is not None}
    refresh_environments(environment_ids, apps)
    refresh_projects(project_ids, apps)


def refresh_left(environment_ids: Iterable[int], implementation_ids: Iterable[int | None]) -> None:
    """Recount the environments and the implementations' projects that runs left (a re-import
    that changed a run's environment or implementation): ``refresh`` reaches those the runs
    have now, and a group's runs may no longer name the old ones at all."""
    from runs.models import Implementation

    refresh_environments(environment_ids)
    implementation_ids = {pk for pk in implementation_ids if pk is not None}
    if implementation_ids:
        projects = Implementation.objects.filter(pk__any=implementation_ids, project__isnull=False)
        refresh_projects(projects.values_list("project_id", flat=True).distinct())


def refresh_environments(environment_ids: Iterable[int], apps: Any = None) -> None:
    """Recount these environments' published runs."""
    m = _models(apps)
    environment_ids = set(environment_ids)
    if not environment_ids:
        return
    # COUNT(*), not of a column: PostgreSQL counts from the environment's index alone.
    published = m["Run"].objects.filter(visibility="published", environment_id__any=environment_ids).order_by()
    figures = _rows(published.values("environment_id"), published_runs=Count("*"))
    environments = m["Environment"].objects.filter(pk__any=environment_ids).only("pk", *ENVIRONMENT_FIGURES)
    _store(m["Environment"], list(environments), figures, dict(ENVIRONMENT_FIGURES))


def source_submitter_counts(source_ids: Iterable[int], apps: Any = None) -> dict[int, dict[str, int]]:
    """{source id: {"submitter_count": n}}: the distinct submitters of each source's published,
    non-reference runs, read from the (source, submitter) index one submitter at a time (a
    recursive query: the next submitter after the last one found, until there is none), so
    the cost follows the number of submitters, not of runs (COUNT(DISTINCT) over a source of
    977,300 runs: 1,385 ms; this: 31 ms, on PostgreSQL 15)."""
    m = _models(apps)
    ids = sorted(set(source_ids))
    if not ids:
        return {}
    quote = connection.ops.quote_name
    runs, sources = quote(m["Run"]._meta.db_table), quote(m["Source"]._meta.db_table)

    def next_submitter(source: str, after: str) -> str:
        return (
            f"(SELECT r.submitter FROM {runs} r WHERE r.source_id = {source} AND r.visibility = 'published'"
            f" AND NOT r.is_reference{after} ORDER BY r.submitter LIMIT 1)"
        )

    sql = (
        f"WITH RECURSIVE walk (source_id, submitter) AS ("
        f" SELECT s.id, {next_submitter('s.id', '')} FROM {sources} s"
        f" WHERE s.id IN ({', '.join(['%s'] * len(ids))})"
        f" UNION ALL"
        f" SELECT w.source_id, {next_submitter('w.source_id', ' AND r.submitter > w.submitter')}"
        f" FROM walk w WHERE w.submitter IS NOT NULL"
        f") SELECT source_id, COUNT(submitter) FROM walk GROUP BY source_id"
    )
    with connection.cursor() as cursor, index_reads_only(cursor):
        cursor.execute(sql, ids)
        return {source_id: {"submitter_count": n} for source_id, n in cursor.fetchall()}


def refresh_projects(project_ids: Iterable[int], apps: Any = None) -> None:
    """Recompute these projects' figures (runs of all their revisions)."""
    m = _models(apps)
    project_ids = set(project_ids)
    if not project_ids:
        return
    figures = _rows(
        m["Run"]
        .objects.filter(visibility="published", implementation__project_id__any=project_ids)
        .order_by()
        .values("implementation__project_id"),
        published_runs=Count("pk"),
        benchmark_count=Count("benchmark_id", distinct=True),
        last_observed_at=Max("observed_at"),
    )
    _merge(
        figures,
        _rows(
            m["Implementation"].objects.filter(project_id__any=project_ids).order_by().values("project_id"),
            revision_count=Count("pk"),
        ),
    )
    _store(
        m["Project"],
        list(m["Project"].objects.filter(pk__any=project_ids).only("pk", *PROJECT_FIGURES)),
        figures,
        dict(PROJECT_FIGURES),
    )


def refresh_all(apps: Any = None) -> None:
    """Recompute every stored figure from the runs (one pass per kind, whatever the size)."""
    m = _models(apps)
    refresh(m["ComparisonGroup"].objects.values_list("pk", flat=True), apps)
    refresh_projects(m["Project"].objects.values_list("pk", flat=True), apps)


def _rows(values: Any, **aggregates: Any) -> dict[int, dict[str, Any]]:
    """{first column of ``values``: {aggregate: value}} for a grouped query."""
    key = next(iter(values.query.values_select))
    # Aliased: an annotation named like a column (published_runs) would shadow it in the query.
    rows = values.annotate(**{f"figure_{name}": aggregate for name, aggregate in aggregates.items()})
    return {row[key]: {name: row[f"figure_{name}"] for name in aggregates} for row in rows}


def _merge(into: dict[int, dict[str, Any]], more: dict[int, dict[str, Any]]) -> None:
    for pk, row in more.items():
        into.setdefault(pk, {}).update(row)


def _store(model: type, rows: list[Any], figures: dict[int, dict[str, Any]], empty: dict[str, Any]) -> None:
    """Write the figures of ``rows`` where they changed (absent from ``figures``: ``empty``)."""
    changed = []
    for row in rows:
        wanted = {**empty, **{k: v for k, v in figures.get(row.pk, {}).items() if v is not None}}
        if any(getattr(row, name) != value for name, value in wanted.items()):
            for name, value in wanted.items():
                setattr(row, name, value)
            changed.append(row)
    update_rows(model, changed, list(empty))
