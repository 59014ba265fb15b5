"""Run counts kept at write time: ``published_runs`` of comparison groups, benchmarks and sources.

The home page, benchmark pages, search and the API show how many published runs each has; counting
them per request is a COUNT over the runs table (seconds at a million runs). Every write that
can change a count (an import, a moderation action) already recomputes the ranks of the groups
it touched through ``runs.ranking.recompute_groups``, and that calls ``refresh`` with the same
groups: one grouped count of the touched groups' runs, sums of the groups' counts for their
benchmarks and sources, and an update of the rows whose count changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Sum


def refresh(group_ids: Iterable[int]) -> None:
    """Recount the published runs of these groups, then of their benchmarks and sources: one
    grouped count over the touched groups' runs (an index range, or one scan whatever the
    planner's statistics say) and one sum per kind; rows are written only where a count
    changed. A correlated subquery per group took minutes on PostgreSQL when the runs table's
    statistics were stale (a fresh import inside one transaction)."""
    from runs.models import Benchmark, ComparisonGroup, Run, Source, Visibility

    group_ids = sorted(set(group_ids))
    if not group_ids:
        return
    counted = dict(
        Run.objects.filter(group_id__in=group_ids, visibility=Visibility.PUBLISHED)
        .order_by()
        .values_list("group_id")
        .annotate(n=Count("pk"))
    )
    groups = list(ComparisonGroup.objects.filter(pk__in=group_ids).only("pk", "published_runs", "benchmark", "source"))
    _store(ComparisonGroup, groups, counted)
    for model, field in ((Benchmark, "benchmark_id"), (Source, "source_id")):
        ids = {getattr(group, field) for group in groups}
        totals = dict(
            ComparisonGroup.objects.filter(**{f"{field}__in": ids})
            .order_by()
            .values_list(field)
            .annotate(n=Sum("published_runs"))
        )
        _store(model, list(model.objects.filter(pk__in=ids).only("pk", "published_runs")), totals)


def _store(model: type, rows: list[Any], counts: dict[int, int]) -> None:
    changed = []
    for row in rows:
        value = int(counts.get(row.pk) or 0)
        if row.published_runs != value:
            row.published_runs = value
            changed.append(row)
    if changed:
        model.objects.bulk_update(changed, ["published_runs"], batch_size=1000)
