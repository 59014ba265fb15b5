"""The charts each page shows, fed from what the page already loaded (``web.pages``,
``runs.selectors``), plus one values-only query for the benchmark page's charts. Nothing here
costs a query per row."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from kernelindex.prepared import PreparedIn
from runs.models import Benchmark, ComparisonGroup, Run, RunStatus, Visibility
from web import charts
from web.charts.scale import auto_scale, latency_unit
from web.charts.svg import data_table
from web.pages import CaseComparison, CaseRow
from web.templatetags.kiformat import isodate, latency, score, submitter

KERNEL = charts.Series("kernel", "this run", "circle", "s-a")
BASELINE = charts.Series("baseline", "Scoring Baseline", "square", "s-b")
SOL = charts.Series("sol", "speed of light", "diamond", "s-sol")

# The one name of SOL-ExecBench's avg_speedup (T_baseline / T_kernel, geometric mean over the
# cases) and of its per-case form, as the reference run page words it ("20.45× reference").
SPEEDUP_LABEL = "× reference"


def case_label(case: CaseRow | CaseComparison, index: Any = None) -> str:
    axes = ", ".join(f"{k}={v}" for k, v in case.axes.items())
    number = index if index is not None else getattr(case, "index", "")
    return f"#{number} {axes}".strip()


def case_speedup(case: CaseRow) -> float | None:
    if case.baseline_ns and case.latency_ns:
        return case.baseline_ns / case.latency_ns
    return None


@dataclass
class CaseColumns:
    """Which columns of a case table have any value: a column of dashes says nothing."""

    latency: bool
    baseline: bool
    sol: bool
    score: bool
    speedup: bool
    timer: bool
    status: bool


def case_columns(cases: Sequence[CaseRow]) -> CaseColumns:
    return CaseColumns(
        latency=any(c.latency_ns is not None for c in cases),
        baseline=any(c.baseline_ns is not None for c in cases),
        sol=any(c.sol_ns is not None for c in cases),
        score=any(c.score is not None for c in cases),
        speedup=any(case_speedup(c) is not None for c in cases),
        timer=any(c.timer for c in cases),
        status=any(c.status for c in cases),
    )


@dataclass
class CaseRowView:
    case: CaseRow
    speedup: float | None


@dataclass
class RunFigures:
    columns: CaseColumns
    rows: list[CaseRowView]
    latency_chart: SafeString = mark_safe("")
    score_chart: SafeString = mark_safe("")
    score_caption: str = ""


def run_figures(cases: Sequence[CaseRow]) -> RunFigures:
    """Per-case latency against the Scoring Baseline and the speed of light (log scale), and
    per-case SOL score (or × reference where the run publishes no score)."""
    columns = case_columns(cases)
    figures = RunFigures(columns, [CaseRowView(c, case_speedup(c)) for c in cases])
    if not columns.latency:
        return figures
    series = [KERNEL] + ([BASELINE] if columns.baseline else []) + ([SOL] if columns.sol else [])
    rows = [
        charts.Row(
            case_label(c),
            [charts.Mark(c.latency_ns, "kernel"), charts.Mark(c.baseline_ns, "baseline"), charts.Mark(c.sol_ns, "sol")],
        )
        for c in cases
    ]
    against = " against the Scoring Baseline and the speed of light" if len(series) == 3 else ""
    figures.latency_chart = charts.dot_chart(
        rows,
        key="case-latency",
        title=f"Per-case latency{against}",
        unit="ns",
        series=series,
        log=True,
        table=False,
        desc=f"{len(rows)} cases, latency on a log scale{against}; the numbers are in the table of cases below.",
    )
    if columns.score:
        figures.score_chart = charts.dot_chart(
            [(case_label(c), c.score) for c in cases],
            key="case-score",
            title="Per-case SOL score",
            unit="score",
            bars=True,
            table=False,
            desc="SOL score of each case, 0 to 1 (1 is the speed of light); the numbers are in the table below.",
        )
        figures.score_caption = "Per-case SOL score as the run publishes it (1 = speed of light)."
    elif columns.speedup:
        figures.score_chart = charts.dot_chart(
            [(case_label(c), case_speedup(c)) for c in cases],
            key="case-speedup",
            title=f"Per-case {SPEEDUP_LABEL}",
            unit="x",
            bars=True,
            table=False,
            desc="Scoring Baseline time divided by this run's time, per case; bars right of 1× are faster.",
        )
        figures.score_caption = (
            "Per-case × reference: the Scoring Baseline's time ÷ this run's time; right of 1× is faster."
        )
    return figures


def compare_figures(run: Run, other: Run, cases: Sequence[CaseComparison]) -> dict[str, Any]:
    """Per-case latency of both runs side by side; without per-case data, the headline
    metrics as bars."""
    a, b = charts.Series("a", run.public_id, "circle", "s-a"), charts.Series("b", other.public_id, "square", "s-b")
    if cases:
        rows = [
            charts.Row(case_label(c, i), [charts.Mark(c.a_ns, "a"), charts.Mark(c.b_ns, "b")])
            for i, c in enumerate(cases)
        ]
        chart = charts.dot_chart(
            rows,
            key="compare-cases",
            title=f"Per-case latency: {run.public_id} and {other.public_id}",
            unit="ns",
            series=[a, b],
            log=True,
            table=False,
            desc=f"{len(rows)} cases, latency of both runs on a log scale; the numbers are in the table below.",
        )
        return {"chart": chart, "headline_charts": []}
    headline = []
    for attr, unit, name in (("latency_ns", "ns", "Latency"), ("sol_score", "score", "SOL score"),
                             ("avg_speedup", "x", SPEEDUP_LABEL)):  # fmt: skip
        values = (getattr(run, attr), getattr(other, attr))
        if all(v is not None for v in values):
            headline.append(
                charts.dot_chart(
                    [
                        (f"{run.public_id} · {run.submitter}", values[0]),
                        (f"{other.public_id} · {other.submitter}", values[1]),
                    ],
                    key=f"compare-{attr}",
                    title=f"{name}: {run.public_id} and {other.public_id}",
                    unit=unit,
                    bars=True,
                    table=False,
                    desc=f"{name} of both runs as bars; the numbers are in the headline table above.",
                )
            )
    return {"chart": mark_safe(""), "headline_charts": headline}


# -- benchmark page ------------------------------------------------------------------------------


@dataclass
class GroupFigures:
    timeline: SafeString = mark_safe("")
    distribution: SafeString = mark_safe("")
    records: list[dict[str, Any]] = field(default_factory=list)  # each time the best improved
    metric_label: str = ""
    run_count: int = 0  # runs charted: published, with a value, not reference rows
    records_table: SafeString = mark_safe("")  # the timeline's text alternative (visually hidden)


def _metric(group: ComparisonGroup) -> tuple[str, str, str]:
    """(column, chart unit, words) of the group's ranking metric."""
    if group.ranking_metric == "sol_score":
        return "sol_score", "score", "SOL score"
    return group.ranking_metric, "ns", "latency"


# The metric values of every published run of some groups, compiled once per number of groups.
_metric_values = PreparedIn(
    lambda group_ids: (
        Run.objects.filter(group_id__in=group_ids, visibility=Visibility.PUBLISHED)
        .order_by("observed_at", "public_id")
        .values_list(
            "group_id",
            "public_id",
            "submitter",
            "title",
            "sol_score",
            "latency_ns",
            "observed_at",
            "is_reference",
            "status",
            "quarantined",
        )
    )
)


def benchmark_figures(benchmark: Benchmark, groups: Sequence[ComparisonGroup]) -> dict[int, GroupFigures]:
    """Per comparison group: the best result over time (each run by the date it was observed,
    for SOL-ExecBench boards the submission date) and the distribution of all its runs.
    1 query: the metric values of every published run of the page's groups."""
    rows = _metric_values([g.pk for g in groups])
    by_group: dict[int, list[tuple]] = {}
    for row in rows:
        by_group.setdefault(row[0], []).append(row)
    return {g.pk: _group_figures(g, by_group.get(g.pk, [])) for g in groups}


def attach(blocks: Sequence[dict[str, Any]], by_group: dict[int, GroupFigures]) -> None:
    """Give each of selectors.benchmark_groups' blocks its figures, for the template."""
    for block in blocks:
        block["figures"] = by_group.get(block["group"].pk, GroupFigures())


# Fewer runs than this are read from the table better than from a histogram.
DISTRIBUTION_MIN = 5


def _group_figures(group: ComparisonGroup, rows: list[tuple]) -> GroupFigures:
    column, unit, words = _metric(group)
    index = 4 if column == "sol_score" else 5
    higher = group.ranking_direction == "desc"
    text = score if unit == "score" else latency
    figures = GroupFigures(metric_label=words)
    runs = [r for r in rows if r[index] is not None and not r[7]]
    figures.run_count = len(runs)
    if len(runs) < 2:
        return figures
    key = group.key[7:19]
    points, best = [], None
    for row in runs:
        _, public_id, submitter, title, _, _, observed, _, status, quarantined = row
        value = row[index]
        who = submitter or title.split(" · ")[0]
        eligible = status == RunStatus.PASSED and not quarantined
        improved = eligible and (best is None or (value > best if higher else value < best))
        if improved:
            best = value
            figures.records.append({"date": observed, "value": value, "who": who, "public_id": public_id})
        if isinstance(observed, datetime):
            points.append(
                charts.XYPoint(
                    observed,
                    value,
                    note=f"{isodate(observed)} · {who} · {text(value)}" + ("" if eligible else " (not eligible)"),
                    muted=not eligible,
                    best=improved,
                )
            )
    product = group.hardware_product
    days = {p.x.date() for p in points if isinstance(p.x, datetime)}
    if len(days) < 2:  # all on one day (a batch of reruns): "over time" would be one vertical line
        points = []
    figures.timeline = charts.timeline_chart(
        points,
        key=f"best-{key}",
        title=f"Best {words} over time on {product}, {group.harness_label}",
        unit=unit,
        desc=(
            f"{len(points)} runs by observed date; the best {words} improved {len(figures.records)} times, "
            f"to {text(best)}. Each improvement is in the table below the chart."
        ),
    )
    figures.records_table = mark_safe(records_table(figures.records, words, unit))
    if len(runs) < DISTRIBUTION_MIN:
        return figures
    figures.distribution = _distribution(
        [r[index] for r in runs], unit, words, key, f"{product}, {group.harness_label}"
    )
    return figures


def _distribution(values: list[float], unit: str, words: str, key: str, where: str) -> SafeString:
    """How many runs fall in each interval between two nice ticks (log intervals for latencies
    that span decades): a histogram drawn as horizontal bars."""
    name, factor = latency_unit(values) if unit == "ns" else ("", 1.0)
    suffix = f" {name}" if unit == "ns" else ""
    scaled = [v / factor for v in values]
    scale = auto_scale(scaled, count=6)
    if unit == "score" and not scale.log:
        scale = auto_scale(scaled, count=6, log=False)
    edges = scale.ticks
    counts = [0] * (len(edges) - 1)
    last = len(counts) - 1
    for x in scaled:
        # The first interval whose upper edge is above x; below the first edge, the first one.
        counts[min(max(bisect_right(edges, x) - 1, 0), last)] += 1
    rows = [(f"{scale.fmt(edges[i])}–{scale.fmt(edges[i + 1])}{suffix}", float(n)) for i, n in enumerate(counts)]
    return charts.dot_chart(
        rows,
        key=f"dist-{key}",
        title=f"Distribution of {len(values)} runs' {words} on {where}",
        unit="runs",
        bars=True,
        series=[charts.Series("value", "runs", "circle", "s-a")],
        desc=f"Number of runs in each {words} interval; reference rows left out.",
    )


def records_table(records: Sequence[dict[str, Any]], words: str, unit: str) -> str:
    text = score if unit == "score" else latency
    return data_table(
        f"Each time the best {words} improved",
        ["date", words, "by", "run"],
        [[isodate(r["date"]), text(r["value"]), r["who"], r["public_id"]] for r in records],
    )


def group_chart(group: ComparisonGroup, rows: Sequence[Run]) -> SafeString:
    """The group page's metric by rank, for the rows of the page (in the ranking rule's order)."""
    column, unit, words = _metric(group)
    charted = sorted(
        (r for r in rows if getattr(r, column) is not None),
        key=lambda r: getattr(r, column),
        reverse=group.ranking_direction == "desc",
    )
    text = score if unit == "score" else latency
    points = []
    for position, run in enumerate(charted, start=1):
        place = f"#{run.rank}" if run.rank else "reference" if run.is_reference else "unranked"
        points.append(
            charts.XYPoint(
                position, getattr(run, column), note=f"{place} {run.submitter}: {text(getattr(run, column))}",
                muted=run.rank is None,
            )
        )  # fmt: skip
    if not points:
        return mark_safe("")
    return charts.rank_chart(
        points,
        key="rank",
        title=f"{words} by position in the ranking",
        unit=unit,
        desc=f"{len(points)} rows of this page in ranking order, {words} from {text(points[0].value)} "
        f"to {text(points[-1].value)}; the numbers are in the table below.",
    )


def benchmark_summary(blocks: Sequence[dict[str, Any]], by_group: dict[int, GroupFigures]) -> list[tuple[str, str]]:
    """The benchmark page's summary card: how many runs where, and the #1 of each group with
    when its result was set (from what the page already loaded)."""
    groups = [b["group"] for b in blocks]
    facts = [
        ("runs", str(sum(g.run_count for g in groups))),
        ("comparison groups", f"{len(groups)} (ranked separately)"),
        ("GPUs", ", ".join(sorted({g.hardware_product for g in groups})) or "—"),
    ]
    for block in blocks:
        group, top = block["group"], block["top"]
        if not top:
            continue
        leader = top[0]
        column, unit, words = _metric(group)
        value = getattr(leader, column)
        shown = f"SOL {score(value)}" if unit == "score" else f"{latency(value)} {leader.primary_statistic}".strip()
        records = by_group.get(group.pk, GroupFigures()).records
        since = f", set {isodate(records[-1]['date'])}" if records else ""
        facts.append(
            (f"#1 on {group.hardware_product} · {group.harness_label}", f"{shown} by {submitter(leader)}{since}")
        )
    return facts


def run_columns(rows: Sequence[Run]) -> dict[str, bool]:
    """Which of a ranking's optional columns have any value on this page of rows."""
    return {
        "sol": any(r.sol_score is not None for r in rows),
        "speedup": any(r.avg_speedup is not None for r in rows),
        "fast": any(r.fast_1_total for r in rows),
    }


# -- the cross-GPU view ------------------------------------------------------------------------

MATRIX_CHARTS = 12  # implementations charted; the table has them all


def matrix_figures(matrix: Any) -> list[dict[str, Any]]:
    """One chart per implementation of the cross-GPU matrix (``web.browse.Matrix``): its value in
    each comparison group it has a run in, one row per group. The rows are separate rankings
    measured on different GPUs or harnesses, which is what the chart shows side by side; it
    never ranks them. Latency groups and SOL-score groups are charted apart (no query)."""
    figures = []
    for index, row in enumerate(matrix.rows[:MATRIX_CHARTS]):
        for metric, unit, noun in (("latency_ns", "ns", "latency"), ("sol_score", "score", "SOL score")):
            rows = [
                charts.Row(
                    f"{group.hardware_product.removeprefix('NVIDIA ')} · {group.harness_label}",
                    [charts.Mark(cell.value, note=f"{cell.run.public_id}, rank {cell.run.rank or '—'}")],
                )
                for group, cell in zip(matrix.groups, row.cells, strict=True)
                if cell is not None and cell.value is not None and group.ranking_metric == metric
            ]
            if not rows:
                continue
            figures.append(
                {
                    "label": row.label,
                    "chart": charts.dot_chart(
                        rows,
                        key=f"gpus-{index}-{metric}",
                        title=f"{row.label}: {noun} in each comparison group",
                        unit=unit,
                        desc=f"{noun} of {row.label} on each GPU and harness it was measured with; "
                        "each row is its own comparison group, not one ranking",
                    ),
                }
            )
    return figures
