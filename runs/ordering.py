"""The orders the lists of runs are read in, written once for the queries and the indexes that
serve them (``runs.models`` declares the indexes, ``api.views`` and the pages order by them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Coalesce

# Keyset sentinels: the API orders nullable columns by COALESCE(column, sentinel) so nulls come
# last; the indexes below are built on the same expressions, so those orderings read an index.
KEYSET_FIRST_TIME = datetime(1, 1, 1, tzinfo=UTC)
KEYSET_LAST_TIME = datetime(9999, 12, 31, tzinfo=UTC)
KEYSET_LAST_INT = 2**31 - 1
KEYSET_LAST_FLOAT = 1e300


class Sentinel(Value):
    """A keyset sentinel written into the SQL text rather than bound as a parameter.

    SQLite uses an expression index only for the same expression, and
    ``COALESCE(observed_at, ?)`` is not ``COALESCE(observed_at, '0001-01-01 00:00:00')``: with
    a bound sentinel every "newest first" list sorted the whole runs table (60 ms a request on
    the shipped data). PostgreSQL's client-side binding already inlines it. The indexes
    themselves keep ``Value``: their DDL is the same text either way."""

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        sql, params = super().as_sql(compiler, connection)
        if connection.vendor != "sqlite" or sql != "%s" or len(params) != 1:
            return sql, params
        value = params[0]
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'", []
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return repr(value), []
        return sql, params


def newest_first_index(name: str, *leading: str, only: Q | None = None) -> models.Index:
    """An index of the published runs in ``newest_first`` order, after ``leading`` columns (the
    filter of the list it serves); ``only``: of the published runs that match it too."""
    return models.Index(
        *leading,
        Coalesce("observed_at", Value(KEYSET_FIRST_TIME)).desc(),
        "public_id",
        condition=Q(visibility="published") & only if only is not None else Q(visibility="published"),
        name=name,
    )


def newest_first() -> list[Any]:
    """Runs newest first, never-observed last, then by public id: the order of every "latest
    runs" list, written as the API's keyset writes it so one index serves both (and SQLite,
    which cannot index NULLS LAST, too)."""
    return [Coalesce("observed_at", Sentinel(KEYSET_FIRST_TIME)).desc(), "public_id"]
