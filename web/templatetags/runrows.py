"""The rows of a run table, written in Python (``{% load runrows %}``, ``{% run_rows runs %}``).

A list page shows 50 runs of nine cells each; as a template loop (``_run_rows.html`` and
``_run_table.html`` before) each row cost about 0.2 ms of variable lookups and filter calls, half
of a list page. Here a row is one format string over values read once, with the same filters
(``kiformat``, ``ranks``) and the same escaping, so the HTML is what the loop wrote;
tests/web/test_run_rows.py renders both and compares them.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from web.templatetags.kiformat import isodate, latency, score, submitter
from web.templatetags.ranks import rank_of

register = template.Library()

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


def _row(run: Any, gpu: str) -> str:
    group = run.group
    if gpu == "group":  # the comparison group's normalised GPU and harness
        product, harness = group.hardware_product, group.harness_label
    else:  # the run's own environment and protocol
        product, harness = run.environment.product, run.protocol.harness_label
    benchmark = run.benchmark
    return _ROW.format(
        url=escape(run.get_absolute_url()),
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
        evidence_label=escape(str(run.get_evidence_level_display())),
    )


@register.simple_tag
def run_rows(runs: Iterable[Any], gpu: str = "group", empty: str = "No runs.") -> SafeString:
    """The ``<tr>`` of each run (link, latency, rank, benchmark, submitter, GPU · harness, SOL,
    observed, evidence), or one row saying ``empty``. ``gpu``: "group" names the comparison
    group's GPU and harness, "run" the run's own environment and protocol."""
    rows = [_row(run, gpu) for run in runs]
    if not rows:
        return mark_safe(f'<tr><td colspan="9">{escape(empty)}</td></tr>')
    return mark_safe("\n  ".join(rows))
