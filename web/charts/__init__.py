"""Server-rendered SVG charts that answer a kernel engineer's questions: no JavaScript, readable
at 375 px (two layouts, see ``web.charts.svg``), nice ticks, units on every axis, log scale where
the data spans decades, and a text alternative for each (``<title>``/``<desc>``, and a table:
visible on the page, or the visually hidden one a chart writes itself with ``table=True``).

Public API (also for pages other than the run, compare and benchmark pages):

``dot_chart(rows, *, key, title, unit="ns", series=None, log=None, bars=False, origin=None,
table=True, desc="")`` — one horizontal row per label, each with one mark per series (or a bar),
on a shared value axis. ``rows`` are ``Row(label, marks)`` with ``Mark(value, series="value",
note="")``, or ``(label, value)`` pairs for one series. ``unit`` is ``"ns"`` (latencies in ns;
the axis picks ns, µs or ms), ``"score"`` (0–1), ``"x"`` (a ratio; bars start at 1×), or any
other unit name, written on the axis as is. Returns safe HTML (the chart, and its hidden table).

``timeline_chart`` (a metric against observed date, with the best-so-far step) and
``rank_chart`` (a metric against rank) are x–y charts for the benchmark and ranking pages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils.safestring import SafeString, mark_safe

from web.charts.scale import Scale, auto_scale, date_ticks, latency_unit, linear_scale, number_text
from web.charts.svg import (
    CHAR,
    FONT,
    Drawing,
    attr,
    data_table,
    escape,
    fit,
    line_element,
    responsive,
    text_element,
)
from web.templatetags.kiformat import latency, ratio, score

__all__ = ["Mark", "Row", "Series", "XYPoint", "dot_chart", "rank_chart", "timeline_chart"]


@dataclass(frozen=True)
class Series:
    key: str
    name: str
    shape: str = "circle"  # circle, square, diamond, tick
    cls: str = "s-a"  # colour class in site.css


DEFAULT_SERIES = (Series("value", "value", "circle", "s-a"),)


@dataclass
class Mark:
    value: float | None
    series: str = "value"
    note: str = ""  # tooltip; the table carries the same


@dataclass
class Row:
    label: str
    marks: list[Mark]
    muted: bool = False


@dataclass
class Unit:
    factor: float  # data value / factor = axis value
    axis: str
    text: Callable[[float], str]  # a data value as the page writes it
    upper: float | None = None
    zero: bool = False
    origin: float | None = None


def unit_of(unit: str, values: Sequence[float]) -> Unit:
    if unit == "ns":
        name, factor = latency_unit(values)
        return Unit(factor, f"latency ({name})", latency)
    if unit == "score":
        return Unit(1.0, "SOL score (0–1, higher is better)", score, upper=1.0, zero=True)
    if unit == "x":
        return Unit(1.0, "× reference (higher is faster)", ratio, origin=1.0)
    return Unit(1.0, unit, lambda v: f"{number_text(v, abs(v) / 100 or 1)} {unit}", zero=True)


def _values(rows: Sequence[Row]) -> list[float]:
    return [m.value for r in rows for m in r.marks if m.value is not None and math.isfinite(m.value)]


def _rows(rows: Sequence[Row | tuple[str, float | None]]) -> list[Row]:
    return [r if isinstance(r, Row) else Row(str(r[0]), [Mark(r[1])]) for r in rows]


def _ticks_for(width: int) -> int:
    return 6 if width > 400 else 4


def _axis_title(unit: Unit, scale: Scale) -> str:
    return unit.axis + (", log scale" if scale.log else "")


def _legend(d: Drawing, series: Sequence[Series], y: float, left: float) -> float:
    """Legend entries left to right, wrapping; returns the y below them."""
    x = left
    for s in series:
        room = 16 + len(s.name) * CHAR + 14
        if x + room > d.width - 4 and x > left:
            x, y = left, y + 18
        d.mark(x + 5, y - 4, s.shape, f"mark {s.cls}")
        d.text(x + 14, y, s.name, "legend")
        x += room
    return y + 10


def dot_chart(
    rows: Sequence[Row | tuple[str, float | None]],
    *,
    key: str,
    title: str,
    unit: str = "ns",
    series: Sequence[Series] | None = None,
    log: bool | None = None,
    bars: bool = False,
    origin: float | None = None,
    table: bool = True,
    desc: str = "",
) -> SafeString:
    """Horizontal rows (label above its track) with marks or bars on one value axis; see the
    module docstring. Empty when no row has a value."""
    rows = _rows(rows)
    series = tuple(series or DEFAULT_SERIES)
    values = _values(rows)
    if not values:
        return mark_safe("")
    u = unit_of(unit, values)
    axis_values = [v / u.factor for v in values]
    zero = u.zero or (bars and not (log or (u.origin and min(axis_values) > 0)))
    base = origin if origin is not None else u.origin
    # Each mark's series and escaped tooltip, written once for both layouts.
    series_of = {s.key: s for s in reversed(series)}
    drawn = []
    for row in rows:
        row_marks = []
        for mark in row.marks:
            if mark.value is None or not math.isfinite(mark.value):
                continue
            s = series_of.get(mark.series, series[0])
            tip = f"{row.label}: {s.name} {u.text(mark.value)}" + (f" ({mark.note})" if mark.note else "")
            row_marks.append((mark.value, s, escape(tip)))
        drawn.append((row, row_marks))

    def render(width: int) -> tuple[Drawing, float]:
        d = Drawing(width)
        scale = auto_scale(axis_values + ([base] if bars and base else []), count=_ticks_for(width), zero=zero, log=log)
        if u.upper is not None and not scale.log:
            scale = linear_scale(axis_values, count=_ticks_for(width), zero=zero, upper=u.upper)
        left, right = 24.0, width - 28.0

        def x_of(value: float) -> float:
            return left + (right - left) * min(1.0, max(0.0, scale.fraction(value / u.factor)))

        y = 16.0
        if len(series) > 1:
            y = _legend(d, series, y, 4) + 8
        top = y
        room = width - 8
        for row, row_marks in drawn:
            label = escape(fit(row.label, room))
            d.parts.append(
                text_element("rowlabel muted" if row.muted else "rowlabel", "4", attr(y + 4), "start", label)
            )
            track = y + 16
            for value, s, tip in row_marks:
                if bars:
                    start = x_of(base * u.factor) if base and not zero else x_of(max(scale.low, 0) * u.factor)
                    end = x_of(value)
                    d.rect(min(start, end), track - 5, abs(end - start), 10, f"bar {s.cls}", tip, escaped=True)
                else:
                    cls = f"mark {s.cls}{' muted' if row.muted else ''}"
                    d.mark(x_of(value), track, s.shape, cls, tip, escaped=True)
            y += 34
        bottom = y - 6
        # Grid under the marks would hide them: draw it first.
        grid = Drawing(width)
        for tick in scale.ticks:
            x = x_of(tick * u.factor)
            grid.line(x, top - 2, x, bottom, "grid")
            grid.text(x, bottom + 16, scale.fmt(tick), "tick", "middle")
        if bars and base and not zero:
            grid.line(x_of(base * u.factor), top - 2, x_of(base * u.factor), bottom, "axis")
        grid.line(left, bottom, right, bottom, "axis")
        grid.text((left + right) / 2, bottom + 34, _axis_title(u, scale), "label", "middle")
        d.parts = grid.parts + d.parts
        return d, bottom + 42

    summary = desc or _summary(rows, series, u)
    html = responsive(render, key=key, title=title, desc=summary)
    if table:
        header = ["", *(s.name for s in series)]
        body = [
            [r.label, *(u.text(next((m.value for m in r.marks if m.series == s.key), None)) for s in series)]
            for r in rows
        ]
        html = mark_safe(html + data_table(title, header, body))
    return html


def _summary(rows: Sequence[Row], series: Sequence[Series], u: Unit) -> str:
    parts = []
    for s in series:
        vals = [m.value for r in rows for m in r.marks if m.series == s.key and m.value is not None]
        if vals:
            parts.append(f"{s.name} from {u.text(min(vals))} to {u.text(max(vals))}")
    return f"{len(rows)} rows; " + "; ".join(parts) + "."


# -- x–y charts ----------------------------------------------------------------------------------


@dataclass
class XYPoint:
    x: float | datetime
    value: float
    note: str = ""
    muted: bool = False  # unranked or reference rows: hollow
    best: bool = False  # a new best at the time


def _xy(
    points: Sequence[XYPoint],
    *,
    key: str,
    title: str,
    desc: str,
    unit: str,
    x_axis: str,
    x_ticks: Callable[[int], tuple[float, float, list[tuple[float, str]]]],
    x_value: Callable[[XYPoint], float],
    step_best: bool,
    log: bool | None = None,
) -> SafeString:
    values = [p.value for p in points]
    u = unit_of(unit, values)
    axis_values = [v / u.factor for v in values]
    # What both layouts share is worked out once: the value axis (5 ticks in either), each
    # point's place on it and along x, its marker and its escaped tooltip.
    scale = auto_scale(axis_values, count=5, zero=u.zero and u.upper is not None, log=log)
    if u.upper is not None and not scale.log:
        scale = linear_scale(axis_values, count=5, upper=u.upper)
    labels = [scale.fmt(t) for t in scale.ticks]
    left = max(len(t) for t in labels) * CHAR + 12
    ordered = sorted(points, key=x_value)
    marks = [
        (
            x_value(p),
            scale.fraction(p.value / u.factor),
            "diamond" if p.best and step_best else "circle",
            "mark s-muted" if p.muted else ("mark s-best" if p.best and step_best else "mark s-a"),
            escape(p.note),
        )
        for p in ordered
    ]
    improvements = [(x, fraction) for (x, fraction, *_), p in zip(marks, ordered, strict=True) if p.best]
    tick_fractions = [(scale.fraction(tick), text) for tick, text in zip(scale.ticks, labels, strict=True)]
    y_title = _axis_title(u, scale)

    def render(width: int) -> tuple[Drawing, float]:
        d = Drawing(width)
        height = 240 if width > 400 else 220
        right, top, bottom = width - 34.0, 30.0, height - 44.0
        x_low, x_high, ticks = x_ticks(width)
        rise = bottom - top
        width_x, span = right - left, (x_high - x_low) or 1.0

        # The grid's and ticks' fixed coordinates, written once per layout.
        x1, x2, label_x = attr(left), attr(right), attr(left - 6)
        for fraction, text in tick_fractions:
            y = bottom - rise * fraction
            at = attr(y)
            d.parts.append(line_element("grid", x1, at, x2, at))
            d.parts.append(text_element("tick", label_x, attr(y + FONT / 3), "end", escape(text)))
        y1, y2, label_y = attr(bottom), attr(bottom + 4), attr(bottom + 18)
        for value, text in ticks:
            if not x_low <= value <= x_high:  # a nice step past the last rank (30 for 25 rows)
                continue
            x = left + width_x * (value - x_low) / span
            at = attr(x)
            d.parts.append(line_element("axis", at, y1, at, y2))
            # Centred under its tick, but kept inside the drawing: a date at the axis' start
            # ("2026-07-10" under x = 40) would otherwise begin left of the viewBox, cut off.
            half = len(text) * CHAR / 2 + 2
            d.parts.append(text_element("tick", attr(min(max(x, half), width - half)), label_y, "middle", escape(text)))
        d.line(left, top - 6, left, bottom, "axis")
        d.line(left, bottom, right, bottom, "axis")
        d.text(4, 14, y_title, "label")
        d.text((left + right) / 2, height - 8, x_axis, "label", "middle")
        if step_best:
            best: list[tuple[float, float]] = []
            for x, fraction in improvements:
                x = left + width_x * (x - x_low) / span
                if best:
                    best.append((x, best[-1][1]))
                best.append((x, bottom - rise * fraction))
            if best:
                best.append((right, best[-1][1]))
            d.path(best, "best-line")
        for x, fraction, shape, cls, tip in marks:
            d.mark(left + width_x * (x - x_low) / span, bottom - rise * fraction, shape, cls, tip, escaped=True)
        return d, height

    return responsive(render, key=key, title=title, desc=desc)


def timeline_chart(
    points: Sequence[XYPoint], *, key: str, title: str, unit: str, desc: str, log: bool | None = None
) -> SafeString:
    """A metric against the date each run was observed, with the best-so-far as a step line
    (points with ``best=True`` are the moments the best improved)."""
    points = [p for p in points if isinstance(p.x, datetime) and p.value is not None]
    if len(points) < 2:
        return mark_safe("")

    def stamp(p: XYPoint) -> float:
        return p.x.timestamp()  # type: ignore[union-attr]

    def ticks(width: int) -> tuple[float, float, list[tuple[float, str]]]:
        dates = [p.x for p in points]
        start, end, found, fmt = date_ticks(min(dates), max(dates), 6 if width > 400 else 3)  # type: ignore[type-var]
        if len(found) > (6 if width > 400 else 3) + 1:
            found = found[:: math.ceil(len(found) / (4 if width > 400 else 3))]
        return start.timestamp(), end.timestamp(), [(t.timestamp(), t.astimezone(UTC).strftime(fmt)) for t in found]

    return _xy(
        points, key=key, title=title, desc=desc, unit=unit, x_axis="observed (UTC)", x_ticks=ticks,
        x_value=stamp, step_best=True, log=log,
    )  # fmt: skip


def rank_chart(points: Sequence[XYPoint], *, key: str, title: str, unit: str, desc: str) -> SafeString:
    """A metric against position in the ranking (x = 1, 2, …; reference rows in place, hollow)."""
    points = [p for p in points if p.value is not None]
    if not points:
        return mark_safe("")
    count = len(points)

    def ticks(width: int) -> tuple[float, float, list[tuple[float, str]]]:
        scale = linear_scale([1, max(count, 2)], count=6 if width > 400 else 3)
        found = [(t, number_text(t)) for t in scale.ticks if t >= 1]
        if not found or found[0][0] != 1:
            found.insert(0, (1, "1"))
        return 0.5, max(count, 2) + 0.5, found

    return _xy(
        points, key=key, title=title, desc=desc, unit=unit, x_axis="position in the ranking", x_ticks=ticks,
        x_value=lambda p: float(p.x), step_best=False,  # type: ignore[arg-type]
    )  # fmt: skip
