"""``Inline(value)``: a value written into the SQL text instead of bound as a parameter.

A query planner decides from the text alone whether a partial index applies (``WHERE
visibility = 'published'``) or an expression index gives the order (``ORDER BY
COALESCE(observed_at, '0001-01-01')``). A bound value hides that:

- SQLite matches an expression index only against the same expression, and
  ``COALESCE(observed_at, ?)`` is not it: with a bound sentinel every "newest first" list
  sorted the whole runs table (60 ms a request on the shipped data).
- PostgreSQL with server-side binding plans a statement it has prepared (psycopg prepares one
  after its fifth run on a connection) once for any values, a generic plan, and keeps it only
  while it costs no more than the plans made for each call's values. A generic plan of
  ``visibility = $1`` can use no index of the published runs, so the run lists were planned
  anew on every request (5–9 ms of planning for 0.5 ms of execution on the shipped data).

``Inline`` writes the keyset sentinels and the ids a list is filtered on (ints);
``kernelindex.lookups.InlinedExact`` the texts that partial indexes name (visibility, status,
evidence level), quoted by ``quoted``. Other values (and ``None``) are bound as usual.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Value


def quoted(text: str) -> str:
    """A text as an SQL string literal, with "%" doubled: Django's SQL is "%s"-formatted."""
    return "'" + text.replace("'", "''").replace("%", "%%") + "'"


def literal(value: Any, vendor: str) -> str | None:
    """``value`` as SQL text, or None when it has no literal form here."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):  # int(): PostgreSQL's backend sends psycopg's Int4(2), Int8(…)
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, datetime) and value.tzinfo is not None and vendor == "postgresql":
        return f"'{value.isoformat()}'::timestamptz"
    return None


class Inline(Value):
    """A constant of the code, compared or sorted on by an index: written into the SQL."""

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        sql, params = super().as_sql(compiler, connection)
        if sql != "%s" or len(params) != 1:
            return sql, params
        text = literal(params[0], connection.vendor)
        return (text, []) if text is not None else (sql, params)
