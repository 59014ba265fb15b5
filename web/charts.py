"""Server-rendered SVG charts: no JavaScript, scale to any width through their viewBox.

Each chart is an ``<svg role="img">`` with a <title> and <desc> for screen readers; the numbers
it shows are also in a table on the same page, so the chart is never the only way to read them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH = 640
HEIGHT = 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 40


@dataclass
class Point:
    x_label: str
    value: float
    label: str  # tooltip text
    muted: bool = False


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / count
    return [low + step * i for i in range(count + 1)]


def _svg(title: str, desc: str, body: list[str]) -> SafeString:
    return mark_safe(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="chart-title chart-desc" preserveAspectRatio="xMidYMid meet">'
        f'<title id="chart-title">{escape(title)}</title><desc id="chart-desc">{escape(desc)}</desc>'
        + "".join(body)
        + "</svg>"
    )


def _axes(y_values: list[float], fmt: Callable[[float], str], log: bool) -> tuple[list[str], Callable]:
    low, high = min(y_values), max(y_values)
    if log:
        low, high = math.log10(low), math.log10(high)
    if high == low:
        low, high = low - 1, high + 1
    pad = (high - low) * 0.05
    low, high = low - pad, high + pad
    plot_h = HEIGHT - TOP - BOTTOM

    def y_of(value: float) -> float:
        v = math.log10(value) if log else value
        return TOP + plot_h * (1 - (v - low) / (high - low))

    body = [
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>',
    ]
    for tick in _ticks(low, high):
        value = 10**tick if log else tick
        y = y_of(value)
        body.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        body.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(fmt(value))}</text>')
    return body, y_of


def metric_by_rank(points: Sequence[Point], *, title: str, y_label: str, fmt: Callable[[float], str]) -> SafeString:
    """Dots of a metric against rank (one per row, in the order given)."""
    points = [p for p in points if p.value is not None and math.isfinite(p.value)]
    if not points:
        return mark_safe("")
    body, y_of = _axes([p.value for p in points], fmt, log=False)
    plot_w = WIDTH - LEFT - RIGHT
    step = plot_w / max(len(points), 1)
    for i, point in enumerate(points):
        x = LEFT + step * (i + 0.5)
        cls = "dot muted" if point.muted else "dot"
        body.append(
            f'<circle class="{cls}" cx="{x:.1f}" cy="{y_of(point.value):.1f}" r="4">'
            f"<title>{escape(point.label)}</title></circle>"
        )
        if len(points) <= 25 or i % max(1, len(points) // 20) == 0:
            body.append(
                f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                f"{escape(point.x_label)}</text>"
            )
    body.append(
        f'<text class="label" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">rank</text>'
        f'<text class="label" x="{LEFT}" y="14" text-anchor="start">{escape(y_label)}</text>'
    )
    desc = f"{len(points)} rows; {y_label} from {fmt(points[0].value)} (first) to {fmt(points[-1].value)} (last)."
    return _svg(title, desc, body)


def paired_latency(
    rows: Sequence[tuple[str, float | None, float | None]],
    *,
    title: str,
    names: tuple[str, str],
    fmt: Callable[[float], str],
) -> SafeString:
    """Two bars per case (A and B latency), log scale so small and large cases both show."""
    values = [v for _, a, b in rows for v in (a, b) if v is not None and v > 0]
    if not values:
        return mark_safe("")
    body, y_of = _axes(values, fmt, log=True)
    plot_w = WIDTH - LEFT - RIGHT
    step = plot_w / max(len(rows), 1)
    bar = max(1.0, step * 0.38)
    base = HEIGHT - BOTTOM
    for i, (label, a, b) in enumerate(rows):
        x = LEFT + step * i + step * 0.1
        for offset, value, cls, name in ((0, a, "bar a", names[0]), (bar, b, "bar b", names[1])):
            if value is None or value <= 0:
                continue
            y = y_of(value)
            height = max(0.0, base - y)
            body.append(
                f'<rect class="{cls}" x="{x + offset:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{height:.1f}">'
                f"<title>{escape(f'case {label}: {name} {fmt(value)}')}</title></rect>"
            )
        if len(rows) <= 24:
            body.append(
                f'<text class="tick" x="{x + bar:.1f}" y="{base + 16}" text-anchor="middle">{escape(str(i))}</text>'
            )
    body.append(
        f'<rect class="bar a" x="{LEFT}" y="4" width="10" height="10"/>'
        f'<text class="legend" x="{LEFT + 14}" y="13">{escape(names[0])}</text>'
        f'<rect class="bar b" x="{LEFT + 110}" y="4" width="10" height="10"/>'
        f'<text class="legend" x="{LEFT + 124}" y="13">{escape(names[1])}</text>'
        f'<text class="label" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">case</text>'
    )
    desc = f"Per-case latency of {names[0]} and {names[1]} over {len(rows)} cases, log scale."
    return _svg(title, desc, body)
