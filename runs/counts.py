"""Run counts kept at write time: ``published_runs`` of comparison groups, benchmarks and sources.

The home page, benchmark pages, search and the API show how many published runs each has; counting
them per request is a COUNT over the runs table (seconds at a million runs). Every write that
can change a count (an import, a moderation action) already recomputes the ranks of the groups
it touched through ``runs.ranking.recompute_groups``, and that calls ``refresh`` with the same
groups: one UPDATE per kind, each counting only the runs of the touched groups (an index range)
and summing the groups' counts for benchmarks and sources.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce


def refresh(group_ids: Iterable[int]) -> None:
    """Recount the published runs of these groups, then of their benchmarks and sources (3 queries
    and 2 to find the benchmarks and sources)."""
    from runs.models import Benchmark, ComparisonGroup, Run, Source, Visibility

    group_ids = sorted(set(group_ids))
    if not group_ids:
        return
    runs = (
        Run.objects.filter(group=OuterRef("pk"), visibility=Visibility.PUBLISHED)
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    groups = ComparisonGroup.objects.filter(pk__in=group_ids)
    groups.update(published_runs=Coalesce(Subquery(runs, output_field=IntegerField()), Value(0)))
    touched = groups.values_list("benchmark_id", "source_id")
    benchmark_ids = {benchmark for benchmark, _ in touched}
    source_ids = {source for _, source in touched}
    for model, field, ids in ((Benchmark, "benchmark", benchmark_ids), (Source, "source", source_ids)):
        total = (
            ComparisonGroup.objects.filter(**{field: OuterRef("pk")})
            .order_by()
            .values(field)
            .annotate(n=Sum("published_runs"))
            .values("n")
        )
        model.objects.filter(pk__in=ids).update(
            published_runs=Coalesce(Subquery(total, output_field=IntegerField()), Value(0))
        )
