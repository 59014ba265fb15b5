"""CSV cells that a spreadsheet cannot run (no Django, no models).

A cell whose text starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read
as a formula by Excel, LibreOffice and Google Sheets (OWASP "CSV injection"), and every text
column of an export can carry what a submitter or a source wrote (benchmark ids, GPU names,
harness names…). So every *text* cell that starts with one of them gets a leading apostrophe.

Numbers stay numbers: an ``int`` or ``float`` (a negative latency delta, ``-3``) is written as
the number it is, since a spreadsheet reads ``-3`` as the number −3 and never as a formula. A
*string* that happens to look like a number (``"-3"``, ``"+1"``) is text a submitter wrote and is
neutralised like any other text: the type decides, not the look of the value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> Any:
    """One CSV cell: text starting like a formula gets a leading apostrophe; the rest as is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def row(values: Iterable[Any]) -> list[Any]:
    """A CSV row with every cell through ``cell``; what every CSV writer of the project writes."""
    return [cell(value) for value in values]
