"""The one set of number and date filters the site uses (``{% load kiformat %}``).

Every latency, ratio, score and date on a page goes through these, so "18.6 µs", "20.45×",
"0.9882" and "2026-07-24" are written the same way everywhere. Missing values render as "—".
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from kernelindex import canonical, links
from kernelindex.markup import conditional_escape as conditional

register = template.Library()

MISSING = "—"
_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))


def _number(value: Any) -> float | None:
    if type(value) is float:  # most values: a stored latency or score
        return value if math.isfinite(value) else None
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _significant(value: float, digits: int = 3) -> str:
    """3 significant digits without exponent or trailing zeros: 18.58 → '18.6', 194.4 → '194'."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def latency_parts(ns: Any) -> tuple[str, str] | None:
    """(value, unit) for a latency in nanoseconds, in the largest unit that keeps it ≥ 1."""
    number = _number(ns)
    if number is None:
        return None
    magnitude = abs(number)
    # The largest unit whose scale the latency reaches (_UNITS: ns, µs, ms, s).
    index = 3 if magnitude >= 1e9 else 2 if magnitude >= 1e6 else 1 if magnitude >= 1e3 else 0
    # "g" writes 3 significant digits without trailing zeros, as _significant does, at a fifth of
    # its cost (a benchmark page writes some fifty latencies), except with an exponent: 1000
    # after rounding ("1e+03"), 0.0001 ns and less, and 1000 s and more. Those take _significant.
    text = f"{number / _UNITS[index][1]:.3g}" if number else "0"
    if "e" not in text:
        return text, _UNITS[index][0]
    text = _significant(number / _UNITS[index][1])
    # 999.7 ns rounds to 1000 ns: say 1 µs instead.
    if index + 1 < len(_UNITS) and abs(float(text)) >= 1000:
        index += 1
        text = _significant(number / _UNITS[index][1])
    return text, _UNITS[index][0]


@register.filter
def http_url(value: Any) -> str:
    """A stored URL when it is an absolute http(s) URL (``kernelindex.links``), else "".

    Every template that makes a stored URL an ``href`` goes through this, so a ``javascript:``
    link stored before the import checks existed (or by any path that missed them) is never
    clickable: ``{% with href=a.url|http_url %}{% if href %}<a href="{{ href }}">…``.
    """
    return value if links.is_http_url(value) else ""


@register.filter
def latency(ns: Any) -> str:
    """Nanoseconds → '18.6 µs'."""
    parts = latency_parts(ns)
    return f"{parts[0]} {parts[1]}" if parts else MISSING


@register.filter
def latency_value(ns: Any) -> str:
    parts = latency_parts(ns)
    return parts[0] if parts else MISSING


@register.filter
def latency_unit(ns: Any) -> str:
    parts = latency_parts(ns)
    return parts[1] if parts else ""


@register.filter
def ratio(value: Any) -> str:
    """A speed-up or ratio → '20.45×'."""
    number = _number(value)
    return MISSING if number is None else f"{number:.2f}×"


@register.filter
def score(value: Any) -> str:
    """A score in [0, 1] → '0.9882'."""
    number = _number(value)
    return MISSING if number is None else f"{number:.4f}"


@register.filter
def isodate(value: Any) -> str:
    """A date or datetime → '2026-07-24' (UTC)."""
    # isoformat, not strftime: the same text for any year from 1000, at a tenth of the cost
    # (a benchmark page writes a date into each of its chart's tooltips).
    if isinstance(value, datetime):
        if timezone.is_aware(value):
            value = value.astimezone(UTC)
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return MISSING


@register.filter
def isodatetime(value: Any) -> str:
    """A datetime → '2026-07-24 02:49 UTC'."""
    if isinstance(value, datetime):
        if timezone.is_aware(value):
            value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return MISSING


@register.filter
def shortdigest(value: Any, length: int = 16) -> str:
    """'sha256:afb19fba8875cb05…': the first ``length`` hex digits, then an ellipsis."""
    return canonical.short(str(value or ""), int(length))


@register.filter
def plain(value: Any) -> str:
    """A number from a document, as written (ints stay ints); None → '—'."""
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@register.filter
def submitter(run: Any) -> str:
    """Who a run is by, as its page names it (the submitter, else its title's first part).
    KernelIndex's reruns are all by "KernelIndex": their revision ("reference",
    "torch-compile"…) tells the rows of one board apart."""
    from runs.selectors import identity_labels

    labels = identity_labels(run)
    name = labels["implementation"] or MISSING
    if run.evidence_level == "kernelindex_rerun" and labels["revision"]:
        return f"{name} · {labels['revision']}"
    return name


@register.filter
def breakable(value: Any) -> str:
    """An identifier that may wrap only after "/" or "_" (level1/19_ReLU), never mid-word: the
    text escaped, with a <wbr> after each of those characters."""
    text = conditional_escape(str(value))
    return mark_safe(text.replace("/", "/<wbr>").replace("_", "_<wbr>"))


@register.simple_tag
def digest_field(value: Any, length: int, name: str, link: str = "") -> SafeString:
    """A digest or key shortened to ``length`` hex digits (linked to ``link`` when given), with
    its full value in a read-only field to select and copy; ``name`` tells the fields of one
    page apart (``copy-<name>``). ``{% digest_field run.digest 23 "digest" %}`` on Django's
    pages, ``digest_field(…)`` on the run page (web.jinja)."""
    short, full, key = conditional(shortdigest(value, length)), conditional(value), conditional(name)
    # f-strings over format_html: a run page writes five of these (format_html cost 15 µs each).
    shown = (
        f'<a href="{conditional(link)}" title="{full}"><code>{short}</code></a>'
        if link
        else f'<code title="{full}">{short}</code>'
    )
    return mark_safe(
        f'<span class="digest-field">{shown}<label class="visually-hidden" for="copy-{key}">Full value</label>'
        f'<input class="copy" id="copy-{key}" type="text" readonly value="{full}" '
        f'aria-label="full {key} digest, select to copy">'
        "</span>"
    )
