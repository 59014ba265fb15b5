"""How a rank is written (``{% load ranks %}``): always "of how many", from the group's stored
``ranked_count`` (no query), and a group of one says so instead of "Rank 1"."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()

ONLY = "only run in its group"


def _parts(run: Any) -> tuple[int, int] | None:
    rank = getattr(run, "rank", None)
    if not rank:
        return None
    group = getattr(run, "group", None)
    total = getattr(group, "ranked_count", 0) or 0
    return rank, max(total, rank)


@register.filter
def rank_of(run: Any) -> str:
    """For a table cell: '3 of 20', 'only run in its group', 'reference', '—'."""
    parts = _parts(run)
    if parts is None:
        return "reference" if getattr(run, "is_reference", False) else "—"
    rank, total = parts
    return ONLY if total == 1 else f"{rank} of {total}"


@register.filter
def rank_headline(run: Any) -> str:
    """For a sentence: 'Rank 3 of 20 in its comparison group', 'The only ranked run in its comparison group'."""
    parts = _parts(run)
    if parts is None:
        if getattr(run, "is_reference", False):
            return "Reference row, unranked in its comparison group"
        return "Not ranked in its comparison group"
    rank, total = parts
    if total == 1:
        return "The only ranked run in its comparison group"
    return f"Rank {rank} of {total} in its comparison group"
