"""The orders the lists of runs are read in, written once for the queries and the indexes that
serve them (``runs.models`` declares the indexes, ``api.views`` and the pages order by them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import models
from django.db.models import Q, Value
from django.db.models.functions import Coalesce

from kernelindex.inline import Inline

# Keyset sentinels: the API orders nullable columns by COALESCE(column, sentinel) so nulls come
# last; the indexes below are built on the same expressions, so those orderings read an index.
KEYSET_FIRST_TIME = datetime(1, 1, 1, tzinfo=UTC)
KEYSET_LAST_TIME = datetime(9999, 12, 31, tzinfo=UTC)
KEYSET_LAST_INT = 2**31 - 1
KEYSET_LAST_FLOAT = 1e300


class Sentinel(Inline):
    """A keyset sentinel: written into the SQL text (``kernelindex.inline``), so that
    ``COALESCE(observed_at, sentinel)`` is the indexed expression on SQLite, and on PostgreSQL in
    the generic plan of a prepared statement too. The indexes themselves keep ``Value``: their
    DDL is the same text either way."""


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
