"""The rows of the long tables, written in Python (``{% load runrows %}``): ``{% run_rows runs %}``
(run lists), ``{% ranking_rows rows cols %}`` (a comparison group's ranking) and
``{% cases_table table caption %}`` (the cases of a workload, on the run and benchmark pages) and
``{% history_table history caption %}`` (a record's revisions, on the run and project pages).

A list page shows 50 runs of nine cells each; as a template loop (``_run_rows.html`` and
``_run_table.html`` before) each row cost about 0.2 ms of variable lookups and filter calls, half
of a list page. Here a row is one format string over values read once, with the same filters
(``kiformat``, ``ranks``) and the same escaping, so the HTML is what the loop wrote;
tests/web/test_run_rows.py renders both and compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django import template
from django.template.defaultfilters import capfirst, truncatechars
from django.urls import get_script_prefix
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from kernelindex.markup import escape
from runs.models import EvidenceLevel, Project, Run, RunStatus
from web.templatetags.kiformat import MISSING, isodate, latency, plain, ratio, score, submitter
from web.templatetags.ranks import rank_of

register = template.Library()

# get_<field>_display() without its per-call dictionary of hashable choices.
_EVIDENCE_LABELS = {value: str(label) for value, label in EvidenceLevel.choices}
_STATUS_LABELS = {value: str(label) for value, label in RunStatus.choices}

_ROW = (
    '<tr><th scope="row" class="id"><a href="{url}">{public_id}</a></th>'
    '<td class="num">{latency} <span class="small">{statistic}</span></td>'
    '<td class="num rank">{rank}</td>'
    '<td class="name"><a href="{benchmark_url}">{benchmark}</a></td>'
    '<td class="who">{submitter}</td>'
    '<td><a href="{group_url}">{gpu} · {harness}</a></td>'
    '<td class="num">{score}</td>'
    '<td class="date">{observed}</td>'
    '<td><span class="badge evidence-{evidence}">{evidence_label}</span></td></tr>'
)


def _row(run: Any, gpu: str, prefix: str) -> str:
    group = run.group
    if gpu == "group":  # the comparison group's normalised GPU and harness
        product, harness = group.hardware_product, group.harness_label
    else:  # the run's own environment and protocol
        product, harness = run.environment.product, run.protocol.harness_label
    benchmark = run.benchmark
    return _ROW.format(
        url=escape(Run.path_of(run.public_id, prefix)),
        public_id=escape(run.public_id),
        latency=escape(latency(run.latency_ns)),
        statistic=escape(str(run.primary_statistic)),
        rank=escape(rank_of(run)),
        benchmark_url=escape(benchmark.get_absolute_url()),
        benchmark=escape(str(benchmark.title)),
        submitter=escape(submitter(run)),
        group_url=escape(group.get_absolute_url()),
        gpu=escape(str(product)),
        harness=escape(str(harness)),
        score=escape(score(run.sol_score)),
        observed=escape(isodate(run.observed_at)),
        evidence=escape(str(run.evidence_level)),
        evidence_label=escape(_EVIDENCE_LABELS.get(run.evidence_level, run.evidence_level)),
    )


@register.simple_tag
def run_rows(runs: Iterable[Any], gpu: str = "group", empty: str = "No runs.") -> SafeString:
    """The ``<tr>`` of each run (link, latency, rank, benchmark, submitter, GPU · harness, SOL,
    observed, evidence), or one row saying ``empty``. ``gpu``: "group" names the comparison
    group's GPU and harness, "run" the run's own environment and protocol."""
    prefix = get_script_prefix()
    rows = [_row(run, gpu, prefix) for run in runs]
    if not rows:
        return mark_safe(f'<tr><td colspan="9">{escape(empty)}</td></tr>')
    return mark_safe("\n  ".join(rows))


def _text(value: Any) -> str:
    """``{{ value }}`` as a template writes it: escaped, None as "None"."""
    return escape(str(value))


def _ranking_row(run: Any, cols: dict[str, bool], prefix: str) -> str:
    url = escape(Run.path_of(run.public_id, prefix))
    if run.is_reference:
        css = "reference"
    elif not run.eligible or not run.rank:
        css = "ineligible"
    else:
        css = ""
    if run.rank:
        rank = escape(rank_of(run))
    elif run.is_reference:
        rank = '<span class="badge">reference</span>'
    else:
        if run.quarantined:
            why = " (quarantined)"
        elif run.status != "passed":
            why = f" ({_text(_STATUS_LABELS.get(run.status, run.status))})"
        elif run.eligible:
            why = " (not their best)"
        else:
            why = ""
        rank = f'<span class="small">unranked{why}</span>'
    flags = getattr(run, "public_flags", None) or []
    cells = [
        f'<tr class="{css}">',
        f'<th scope="row" class="num rank">{rank}</th>',
        f'<td class="id"><a href="{url}">{_text(run.public_id)}</a>',
        f' <a class="badge flagged" href="{url}#replications" title="Flagged by moderators">⚑</a></td>'
        if flags
        else "</td>",
    ]
    if cols.get("sol"):
        cells.append(f'<td class="num">{escape(score(run.sol_score))}</td>')
    cells.append(f'<td class="num">{escape(latency(run.latency_ns))}</td>')
    if cols.get("speedup"):
        cells.append(f'<td class="num">{escape(ratio(run.avg_speedup))}</td>')
    if cols.get("fast"):
        fast = f"{_text(run.fast_1_count)}/{_text(run.fast_1_total)}" if run.fast_1_total else MISSING
        cells.append(f'<td class="num">{fast}</td>')
    notes = "".join(
        f'<p class="flag-note small"><a class="badge flagged" href="{url}#replications">⚑ flagged</a> '
        f"{_text(capfirst(flag.get_category_display()))}: {_text(truncatechars(flag.public_summary, 160))}</p>"
        for flag in flags
    )
    cells.append(f'<td class="who">{escape(submitter(run))}{notes}</td>')
    implementation = run.implementation
    project = implementation.project if implementation is not None else None
    if project:
        cells.append(f'<td><a href="{escape(Project.path_of(project.slug, prefix))}">{_text(project.name)}</a></td>')
    else:
        cells.append(f"<td>{MISSING}</td>")
    cells.append(f'<td class="date">{escape(isodate(run.observed_at))}</td>')
    cells.append(
        f'<td><span class="badge evidence-{_text(run.evidence_level)}">'
        f"{_text(_EVIDENCE_LABELS.get(run.evidence_level, run.evidence_level))}</span></td></tr>"
    )
    return "".join(cells)


@register.simple_tag
def ranking_rows(runs: Iterable[Any], cols: dict[str, bool]) -> SafeString:
    """The ``<tr>`` of each row of a ranking (``runs/group_detail.html``): rank or why unranked,
    the run and its flag, SOL, latency, × reference and cases faster where ``cols`` says the page
    has them (``web.figures.run_columns``), submitter with the moderators' flags, project,
    observed, evidence."""
    prefix = get_script_prefix()  # once: each row links its run and project
    rows = [_ranking_row(run, cols, prefix) for run in runs]
    if not rows:
        return mark_safe('<tr><td colspan="10">No runs in this group yet.</td></tr>')
    return mark_safe("\n  ".join(rows))


# A case table's number columns: (column, how it is written, where its value is).
_CASE_NUMBERS = (
    ("latency", latency, lambda view: view.case.latency_ns),
    ("baseline", latency, lambda view: view.case.baseline_ns),
    ("sol", latency, lambda view: view.case.sol_ns),
    ("speedup", ratio, lambda view: view.speedup),
    ("score", score, lambda view: view.case.score),
)


def _case_row(view: Any, cols: Any, numbers: Sequence[tuple[Callable[[Any], str], Callable[[Any], Any]]]) -> str:
    case = view.case
    cells = [f'<tr><th scope="row" class="num">{_text(case.index)}</th>']
    cells.extend(f'<td class="num">{escape(write(value(view)))}</td>' for write, value in numbers)
    if cols.timer:
        cells.append(f"<td>{_text(case.timer) if case.timer else MISSING}</td>")
    if cols.status:
        detail = f' <span class="small">{_text(case.detail)}</span>' if case.detail else ""
        cells.append(f"<td>{_text(case.status) if case.status else MISSING}{detail}</td>")
    axes = " ".join(f"<span>{_text(k)}={escape(plain(v))}</span>" for k, v in case.axes.items())
    cells.append(f'<td class="axes">{axes or MISSING}</td></tr>')
    return "".join(cells)


@register.simple_tag
def case_rows(table: Any) -> SafeString:
    """The ``<tr>`` of each case of a ``web.figures.RunFigures`` (``cases_table``): its number,
    the columns the table has any value in, and its axes."""
    cols = table.columns
    numbers = [(write, value) for name, write, value in _CASE_NUMBERS if getattr(cols, name)]
    return mark_safe("\n  ".join(_case_row(view, cols, numbers) for view in table.rows))


_CASE_HEADS = (
    ("latency", '<th scope="col" class="num">latency</th>'),
    ("baseline", '<th scope="col" class="num">scoring baseline</th>'),
    ("sol", '<th scope="col" class="num">speed of light</th>'),
    ("speedup", '<th scope="col" class="num">× reference</th>'),
    ("score", '<th scope="col" class="num">SOL score</th>'),
    ("timer", '<th scope="col">timer</th>'),
    ("status", '<th scope="col">status</th>'),
)


@register.simple_tag
def cases_table(table: Any, caption: str) -> SafeString:
    """The table of a ``web.figures.RunFigures``'s cases, headed by the columns it has values in:
    ``{% cases_table figures "Cases of the workload" %}`` on Django's pages (the benchmark page),
    ``cases_table(…)`` on the run page (web.jinja)."""
    heads = "".join(head for name, head in _CASE_HEADS if getattr(table.columns, name))
    label = conditional_escape(caption)  # a template's literal is safe already, as in Django's templates
    return mark_safe(
        f'<div class="table-wrap table-scroll" tabindex="0" role="region" aria-label="{label}">\n'
        f'<table class="cases">\n  <caption>{label}</caption>\n'
        f'  <thead><tr><th scope="col">#</th>{heads}<th scope="col">axes</th></tr></thead>\n'
        f"  <tbody>\n  {case_rows(table)}\n  </tbody>\n</table>\n</div>\n"
    )


def _history_row(row: Any, with_run: bool) -> str:
    cells = ["<tr>"]
    if with_run:
        cells.append(f'<td><a href="{escape(row.run.get_absolute_url())}">{_text(row.run.public_id)}</a></td>')
    if row.changed:
        changed = ", ".join(_text(name) for name in row.changed)
    else:
        changed = "first recorded" if row.number == 1 else MISSING
    cells.append(
        f'<th scope="row" class="num" title="record digest {_text(row.digest)}">{_text(row.number)}</th>'
        f'<td class="date">{escape(isodate(row.created_at))}</td><td>{_text(row.actor)}</td>'
        f"<td>{_text(row.reason)}</td><td>{changed}</td></tr>"
    )
    return "".join(cells)


@register.simple_tag
def history_table(history: list[Any], caption: str, total: int = 0, with_run: bool = False) -> SafeString:
    """The "History" section of a record: ``web.pages.HistoryRow``s, newest first, who changed
    what and why. ``total`` (a run's revision count) says how many are older than those shown;
    ``with_run`` adds the run of each row (a project's page). ``{% history_table history caption
    with_run=True %}`` on Django's pages, ``history_table(…)`` on the run page (web.jinja)."""
    if not history:
        return mark_safe(
            '<section id="history" aria-labelledby="history-h">\n<h2 id="history-h">History</h2>\n'
            "<p>No recorded changes.</p>\n</section>\n"
        )
    label = conditional_escape(caption)  # a template's literal is safe already, as in Django's templates
    if total and total > len(history):
        label += f" (the latest {len(history)} of {_text(total)})"
    run_head = '<th scope="col">run</th>' if with_run else ""
    rows = "".join(_history_row(row, with_run) + "\n  " for row in history)
    return mark_safe(
        '<section id="history" aria-labelledby="history-h">\n<h2 id="history-h">History</h2>\n'
        '<div class="table-wrap" tabindex="0" role="region" aria-label="History">\n<table class="history">\n'
        f"  <caption>{label}</caption>\n"
        f'  <thead><tr>{run_head}<th scope="col" class="num">revision</th><th scope="col">date</th>'
        '<th scope="col">by</th><th scope="col">reason</th><th scope="col">changed</th></tr></thead>\n'
        f"  <tbody>\n  {rows}</tbody>\n</table>\n</div>\n</section>\n"
    )
