"""Charts and the run page's per-case section, without a browser: nice ticks, log axes for data
spanning decades, both layouts with a title and desc, columns without data left out, and one
label for avg_speedup."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from runs.models import Run
from tests.factories import FIRST_BATCH_AND_RERUNS
from tests.web.pages import visible_text
from web import charts
from web.charts.scale import auto_scale, linear_scale, log_scale


def test_linear_ticks_are_multiples_of_1_2_or_5_times_a_power_of_ten():
    scale = linear_scale([0.8341, 1.0369])
    steps = {round(b - a, 12) for a, b in zip(scale.ticks, scale.ticks[1:], strict=False)}
    assert len(steps) == 1 and steps.pop() in (0.05, 0.1, 0.02, 0.2)
    assert [scale.fmt(t) for t in scale.ticks] == ["0.8", "0.85", "0.9", "0.95", "1", "1.05"]
    assert "1.0369" not in [scale.fmt(t) for t in scale.ticks]


def test_data_spanning_decades_goes_on_a_log_axis_with_decade_ticks():
    scale = auto_scale([0.0076, 20.45])
    assert scale.log and [scale.fmt(t) for t in scale.ticks] == ["0.001", "0.01", "0.1", "1", "10", "100"]
    assert [log_scale([2.2, 90]).fmt(t) for t in log_scale([2.2, 90]).ticks] == ["2", "5", "10", "20", "50", "100"]


def test_a_chart_has_two_layouts_each_titled_and_described_and_a_hidden_table():
    html = charts.dot_chart([("H100", 21_000.0), ("B200", 12_400.0)], key="t", title="Latency by GPU", unit="ns")
    assert html.count("<svg") == 2 and 'class="chart chart-wide"' in html and 'class="chart chart-narrow"' in html
    assert html.count("<title id=") == 2 and html.count("<desc id=") == 2
    assert "latency (µs)" in html and '<div class="visually-hidden"><table>' in html and "21 µs" in html
    assert "style=" not in html and "<script" not in html and " on" not in html.replace(" only", "")


@pytest.fixture
def imported(db) -> None:
    call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), verbosity=0)  # the runs these tests read


def test_a_trace_run_charts_its_cases_against_baseline_and_speed_of_light(client, imported):
    run = Run.objects.filter(group__family="sol_execbench_trace").first()
    body = client.get(run.get_absolute_url()).content.decode()
    assert "Per-case latency against the Scoring Baseline and the speed of light" in body
    assert "Per-case SOL score" in body and "log scale" in body
    header = re.search(r'<table class="cases">.*?<thead>(.*?)</thead>', body, re.S).group(1)
    assert [visible_text(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", header)] == [
        "#", "latency", "scoring baseline", "speed of light", "× reference", "SOL score", "status", "axes",
    ]  # fmt: skip


def test_a_leaderboard_run_says_why_its_cases_have_no_latency(client, imported):
    run = Run.objects.filter(group__family="sol_execbench_leaderboard", rank=1).first()
    body = client.get(run.get_absolute_url()).content.decode()
    header = re.search(r'<table class="cases">.*?<thead>(.*?)</thead>', body, re.S).group(1)
    assert ">latency<" not in header and "scoring baseline" in header
    assert "publishes only its suite aggregate" in visible_text(body)
    assert "<svg" not in body.split('id="workload-h"')[1].split('id="measurements-h"')[0]


def test_avg_speedup_has_one_label_everywhere(client, imported):
    run = Run.objects.filter(group__family="sol_execbench_leaderboard", rank=2).first()
    pages = [run.get_absolute_url(), run.group.get_absolute_url(), f"/runs/{run.public_id}/compare/"]
    for url in pages:
        text = visible_text(client.get(url).content.decode())
        assert "× reference" in text, url
        assert "vs baseline" not in text and "vs scoring baseline" not in text, url


def test_a_flagged_run_says_so_beside_its_headline(client, imported):
    from attestations.models import IssueReport, ReportState

    run = Run.objects.filter(group__family="sol_execbench_leaderboard", rank=1).first()
    IssueReport.objects.create(
        run=run, reference="R-HEAD-1", category="correctness", description="private", state=ReportState.FLAGGED,
        public_summary="Timing window exploited on case 3.",
    )  # fmt: skip
    body = client.get(run.get_absolute_url()).content.decode()
    head = body[body.index('<header class="run-head">') : body.index('id="primary-h"')]
    assert "⚑ flagged by moderators" in head and "Timing window exploited on case 3." in head
    assert "private" not in head


def _tick_labels(svg: str) -> tuple[float, list[tuple[float, str]]]:
    width = float(re.search(r'viewBox="0 0 (\d+)', svg).group(1))
    return width, [
        (float(x), text)
        for x, text in re.findall(
            r'<text class="tick" x="([-\d.]+)" y="[-\d.]+" text-anchor="middle">([^<]*)</text>', svg
        )
    ]


@pytest.mark.parametrize("rows", [2, 7, 25, 60])
def test_x_tick_labels_are_on_the_axis_and_inside_the_drawing(rows: int) -> None:
    from datetime import UTC, datetime, timedelta

    from web.charts.svg import CHAR

    start = datetime(2026, 7, 10, 9, tzinfo=UTC)
    ranked = charts.rank_chart(
        [charts.XYPoint(i, 1000.0 + i) for i in range(1, rows + 1)], key="r", title="t", unit="ns", desc="d"
    )
    dated = charts.timeline_chart(
        [charts.XYPoint(start + timedelta(days=70 * i / rows), 1000.0 - i, best=True) for i in range(rows)],
        key="d", title="t", unit="ns", desc="d",
    )  # fmt: skip
    for html, ranks in ((ranked, True), (dated, False)):
        for svg in re.findall(r"<svg.*?</svg>", html):
            width, labels = _tick_labels(svg)
            assert labels
            for x, text in labels:
                # The label's estimated extent lies inside the viewBox: "2026-07-10" under the
                # axis' start used to begin left of it.
                assert len(text) * CHAR / 2 <= x <= width - len(text) * CHAR / 2, (x, text, width)
                if ranks:
                    assert 1 <= int(text) <= max(rows, 2), text  # no tick past the last position
