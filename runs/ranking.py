"""Comparability and ranking (DESIGN §4): the only place that decides what is comparable and
in which order runs rank. Pages and the API read the stored ``Run.rank`` this module writes,
so the eligibility rule and the ranking rule exist exactly once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kernelindex.gpus import normalise_product
from runs.bulk import update_rows


@dataclass(frozen=True)
class RankingRule:
    metric: str  # a Run column: "sol_score" or "latency_ns"
    direction: str  # "asc" or "desc"
    best_per: str  # "submitter", "implementation" or "run"

    @property
    def description(self) -> str:
        what = {"sol_score": "SOL score", "latency_ns": "latency"}.get(self.metric, self.metric)
        order = "highest first" if self.direction == "desc" else "lowest first"
        per = {
            "submitter": "one row per submitter (their best)",
            "implementation": "one row per implementation (its best)",
            "run": "every run",
        }[self.best_per]
        return f"Ranked by {what}, {order}; {per}."


_FAMILY_RULES = {
    "sol_execbench_leaderboard": RankingRule("sol_score", "desc", "submitter"),
    "sol_execbench_trace": RankingRule("latency_ns", "asc", "implementation"),
    "kernelbench_timing": RankingRule("latency_ns", "asc", "run"),
    "kernelindex_rerun": RankingRule("latency_ns", "asc", "implementation"),
}
_DEFAULT_RULE = RankingRule("latency_ns", "asc", "submitter")
_METRIC_ALIASES = {"sol_score": "sol_score", "latency": "latency_ns", "latency_ns": "latency_ns"}


def ranking_rule(protocol_spec: dict[str, Any]) -> RankingRule:
    """The protocol carries the ranking rule; families without one use the source's own rule."""
    family = (protocol_spec.get("comparability") or {}).get("family", "")
    declared = protocol_spec.get("ranking")
    if isinstance(declared, dict):
        base = _FAMILY_RULES.get(family, _DEFAULT_RULE)
        metric = _METRIC_ALIASES.get(str(declared.get("metric", "")), base.metric)
        direction = {"ascending": "asc", "descending": "desc", "asc": "asc", "desc": "desc"}.get(
            str(declared.get("direction", "")), base.direction
        )
        best_per = str(declared.get("bestPer", base.best_per))
        if best_per not in {"submitter", "implementation", "run"}:
            best_per = base.best_per
        return RankingRule(metric, direction, best_per)
    return _FAMILY_RULES.get(family, _DEFAULT_RULE)


def comparison_key_document(
    *, family: str, source: str, benchmark: str, product: str, harness_name: str, harness_version: str
) -> dict[str, Any]:
    """What two runs must share to be compared. Depends on nothing but the run's own bundle."""
    return {
        "family": family,
        "source": source,
        "benchmark": benchmark,
        "hardware": normalise_product(product),
        "harness": {"name": harness_name, "version": harness_version},
    }


@dataclass
class RankRow:
    """What ranking needs of one run (loaded with .values(), no model instances)."""

    pk: int
    group_id: int
    submitter: str
    implementation_id: int | None
    metric: float | None
    observed_at: Any
    public_id: str
    eligible: bool


def compute_ranks(rows: Iterable[RankRow], rule: RankingRule) -> dict[int, int | None]:
    """pk → rank. Eligible rows with a metric, best per submitter/implementation, ranked 1..n.

    Ties keep the earlier observation first, then the public id, so ranks are deterministic.
    """
    rows = list(rows)
    ranks: dict[int, int | None] = {row.pk: None for row in rows}
    candidates = [row for row in rows if row.eligible and row.metric is not None]
    sign = -1.0 if rule.direction == "desc" else 1.0

    def order(row: RankRow) -> tuple:
        observed = row.observed_at.timestamp() if row.observed_at else float("inf")
        return (sign * row.metric, observed, row.public_id)

    candidates.sort(key=order)
    seen: set = set()
    rank = 0
    for row in candidates:
        if rule.best_per == "submitter":
            who = ("s", row.submitter)
        elif rule.best_per == "implementation":
            who = ("i", row.implementation_id or row.submitter)
        else:
            who = ("r", row.pk)
        if who in seen:
            continue
        seen.add(who)
        rank += 1
        ranks[row.pk] = rank
    return ranks


def recompute_groups(group_ids: Iterable[int], run_ids: Iterable[int] | None = None) -> int:
    """Recompute and store the rank of every run in these groups. Returns rows changed.

    One query loads the groups, one loads their runs, one bulk update writes the changes; the
    groups whose number of ranked runs changed get it stored too (``ranked_count``, the M of
    "rank N of M"), so no page counts a group's ranked runs per row.
    The groups' stored run counts are refreshed with them (``runs.counts``; ``run_ids``, the
    runs that changed when the writer knows them, narrow what that recounts).
    """
    from runs import counts as stored_counts
    from runs.models import ComparisonGroup, Run

    group_ids = sorted(set(group_ids))
    if not group_ids:
        return 0
    stored_counts.refresh(group_ids, run_ids=run_ids)
    groups = {
        group.pk: group
        for group in ComparisonGroup.objects.filter(pk__any=group_ids).only(
            "pk", "ranking_metric", "ranking_direction", "best_per", "ranked_count"
        )
    }
    by_group: dict[int, list[RankRow]] = defaultdict(list)
    current: dict[int, int | None] = {}
    fields = (
        "pk",
        "group_id",
        "submitter",
        "implementation_id",
        "sol_score",
        "latency_ns",
        "observed_at",
        "public_id",
        "eligible",
        "rank",
    )
    runs = Run.objects.filter(group_id__any=group_ids).with_eligibility().values(*fields)
    for values in runs.iterator(chunk_size=5000):
        group = groups[values["group_id"]]
        current[values["pk"]] = values["rank"]
        by_group[values["group_id"]].append(
            RankRow(
                pk=values["pk"],
                group_id=values["group_id"],
                submitter=values["submitter"],
                implementation_id=values["implementation_id"],
                metric=values[group.ranking_metric],
                observed_at=values["observed_at"],
                public_id=values["public_id"],
                eligible=bool(values["eligible"]),
            )
        )
    changed: list[tuple[int, int | None]] = []
    counts: dict[int, int] = {group_id: 0 for group_id in groups}
    for group_id, rows in by_group.items():
        group = groups[group_id]
        rule = RankingRule(group.ranking_metric, group.ranking_direction, group.best_per)
        for pk, rank in compute_ranks(rows, rule).items():
            if rank is not None:
                counts[group_id] += 1
            if current[pk] != rank:
                changed.append((pk, rank))
    _store_ranks(changed)
    store_ranked_counts(list(groups.values()), counts)
    return len(changed)


def store_ranked_counts(groups: Iterable[Any], counts: dict[int, int]) -> None:
    """Store each group's number of ranked runs (``ranked_count``, the M of "rank N of M")
    where it changed: one bulk update, none when nothing changed."""
    from runs.models import ComparisonGroup

    recounted = [group for group in groups if group.ranked_count != counts.get(group.pk, 0)]
    for group in recounted:
        group.ranked_count = counts.get(group.pk, 0)
    update_rows(ComparisonGroup, recounted, ["ranked_count"])


def _store_ranks(changed: list[tuple[int, int | None]]) -> None:
    """Write changed ranks (``runs.bulk``: ``bulk_update``'s CASE WHEN per row took most of a
    100,000-run import)."""
    from runs.models import Run

    update_rows(Run, [Run(pk=pk, rank=rank) for pk, rank in changed], ["rank"])
