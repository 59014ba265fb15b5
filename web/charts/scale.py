"""Axis scales for the charts: "nice" ticks (1, 2, 5 × 10^k), log ticks for data that spans
decades, date ticks, and the unit a latency axis is written in.

Pure functions of numbers: no Django, no SVG.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# Data spanning more than this ratio (max/min) goes on a log axis.
LOG_SPAN = 20.0

_LATENCY_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))


def nice_step(span: float, count: int) -> float:
    """The 1, 2 or 5 × 10^k step that cuts ``span`` into about ``count`` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5, 10):
        if multiple * power >= raw * 0.999:
            return multiple * power
    return 10 * power


def number_text(value: float, step: float | None = None) -> str:
    """A tick value as few digits as its step needs: 0.2, 15, 1000, 0.05; never 1.0369."""
    if value == 0:
        return "0"
    reference = abs(step) if step else abs(value)
    decimals = max(0, -math.floor(math.log10(reference) + 1e-9))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass
class Scale:
    """A value axis: ``low``..``high`` in data units, its ticks and how to write them."""

    low: float
    high: float
    ticks: list[float]
    log: bool
    fmt: Callable[[float], str]

    def fraction(self, value: float) -> float:
        """Where ``value`` sits between low (0) and high (1)."""
        if self.log:
            value = max(value, self.low)
            return (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return (value - self.low) / (self.high - self.low)


def linear_scale(values: Sequence[float], *, count: int = 5, zero: bool = False, upper: float | None = None) -> Scale:
    """Ticks every nice step from below the smallest value to above the largest; ``zero`` starts
    the axis at 0 (bars), ``upper`` caps it (a score never exceeds 1)."""
    low, high = min(values), max(values)
    if zero:
        low = min(low, 0.0)
    if high == low:
        high, low = high + (abs(high) or 1) * 0.5, low - (abs(low) or 1) * 0.5
        if zero:
            low = min(0.0, low)
    step = nice_step(high - low, count)
    start = math.floor(low / step + 1e-9) * step
    end = math.ceil(high / step - 1e-9) * step
    if upper is not None and high <= upper:
        end = min(end, upper)
    ticks = []
    value = start
    while value <= end + step * 1e-6:
        ticks.append(round(value, 12))
        value += step
    return Scale(start, end, ticks, False, lambda v: number_text(v, step))


def log_scale(values: Sequence[float], *, count: int = 5) -> Scale:
    """Log axis from a nice value at or below the smallest to one at or above the largest:
    every decade when the data spans several, else 1, 2, 5 × 10^k."""
    positive = [v for v in values if v > 0]
    low, high = min(positive), max(positive)
    k_low, k_high = math.floor(math.log10(low)), math.ceil(math.log10(high))
    if k_high == k_low:
        k_high += 1
    candidates: list[float] = []
    multiples = (1, 2, 5) if k_high - k_low <= 2 else (1,)
    for k in range(k_low, k_high + 1):
        candidates += [m * 10.0**k for m in multiples]
    below = [c for c in candidates if c <= low * 1.000001]
    above = [c for c in candidates if c >= high * 0.999999]
    start, end = max(below), min(above)
    ticks = [c for c in candidates if start <= c <= end]
    if len(ticks) > count + 2 and multiples != (1,):
        # Too many for the width: keep 1 and 5 (or just the decades).
        kept = [t for t in ticks if _mantissa(t) in (1, 5) or t in (start, end)]
        ticks = kept if len(kept) <= count + 2 else [t for t in ticks if _mantissa(t) == 1 or t in (start, end)]
    return Scale(start, end, ticks, True, lambda v: number_text(v))


def _mantissa(value: float) -> int:
    return round(value / 10 ** math.floor(math.log10(value) + 1e-9))


def auto_scale(values: Sequence[float], *, count: int = 5, zero: bool = False, log: bool | None = None) -> Scale:
    """Log when the values are positive and span more than LOG_SPAN, else linear."""
    if log is None:
        positive = [v for v in values if v > 0]
        log = len(positive) == len(values) and max(values) / min(values) > LOG_SPAN
    return log_scale(values, count=count) if log else linear_scale(values, count=count, zero=zero)


def latency_unit(values_ns: Sequence[float]) -> tuple[str, float]:
    """The unit a latency axis is written in: the largest that keeps the median ≥ 1."""
    ordered = sorted(values_ns)
    middle = ordered[len(ordered) // 2] if ordered else 1.0
    unit, scale = _LATENCY_UNITS[0]
    for name, factor in _LATENCY_UNITS:
        if middle >= factor:
            unit, scale = name, factor
    return unit, scale


# -- dates ---------------------------------------------------------------------------------------

_DAY = 86400.0
_DAY_STEPS = (1, 2, 7, 14)
_MONTH_STEPS = (1, 2, 3, 6, 12, 24, 60)


def date_ticks(low: datetime, high: datetime, count: int) -> tuple[datetime, datetime, list[datetime], str]:
    """(start, end, ticks, strftime format): ticks on whole days or on the first of a month,
    at most about ``count`` of them, and the axis widened to the ticks around the data."""
    low, high = low.astimezone(UTC), high.astimezone(UTC)
    span_days = max((high - low).total_seconds() / _DAY, 1.0)
    for days in _DAY_STEPS:
        if span_days / days <= count:
            start = datetime(low.year, low.month, low.day, tzinfo=UTC)
            ticks = [start]
            while ticks[-1] < high:
                ticks.append(ticks[-1] + timedelta(days=days))
            return ticks[0], ticks[-1], ticks, "%Y-%m-%d"
    months_span = span_days / 30.4
    months = next((m for m in _MONTH_STEPS if months_span / m <= count), _MONTH_STEPS[-1])
    index = (low.year * 12 + low.month - 1) // months * months
    ticks = [_month(index)]
    while ticks[-1] < high:
        index += months
        ticks.append(_month(index))
    return ticks[0], ticks[-1], ticks, "%Y-%m" if months < 12 else "%Y"


def _month(index: int) -> datetime:
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
