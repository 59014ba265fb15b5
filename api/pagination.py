"""Keyset ("cursor") pagination with a choice of orderings, nulls last, page size capped.

DRF's CursorPagination positions on one column and cannot order by a nullable one (rank and
latency are null for many runs). Here each ordering is a list of keys, every key made non-null
with a sentinel that sorts after real values, and ends with a unique column; the cursor holds
the last row's key values, so a page costs one query however deep it is and rows never repeat
or go missing while new runs arrive.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import namedtuple
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import BooleanField, Expression, F, Q, QuerySet
from django.db.models.expressions import RawSQL
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response

from api.exceptions import ApiError
from kernelindex.prepared import Prepared


@dataclass(frozen=True)
class Key:
    """One ordering key: an annotation ``alias`` computed by ``expression`` (None: a plain
    column named ``alias``), its direction, and the type of its values in a cursor."""

    alias: str
    expression: Expression | None
    descending: bool
    kind: str  # "str", "int", "float" or "datetime"


def _encode_value(value: Any, kind: str) -> Any:
    if kind == "datetime":
        return value.astimezone(UTC).isoformat()
    return value


def _decode_value(value: Any, kind: str) -> Any:
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == "datetime" and isinstance(value, str):
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            return parsed
    raise ValueError(f"not a {kind}")


class KeysetPagination(BasePagination):
    """The view declares ``orderings`` (name → [Key…]) and ``default_ordering``."""

    page_size = 50
    max_page_size = 500
    limit_param = "limit"
    cursor_param = "cursor"
    ordering_param = "ordering"

    def __init__(self) -> None:
        self.next: str | None = None
        self.previous: str | None = None
        self.request: Request | None = None

    # -- parameters -----------------------------------------------------------------------
    def _orderings(self, view: Any) -> dict[str, list[Key]]:
        return view.orderings

    def _ordering(self, request: Request, view: Any) -> str:
        name = request.query_params.get(self.ordering_param, view.default_ordering)
        if name not in self._orderings(view):
            raise ApiError(
                "invalid",
                f"Unknown ordering {name!r}; choose one of {', '.join(self._orderings(view))}.",
                field=self.ordering_param,
            )
        return name

    def _limit(self, request: Request) -> int:
        raw = request.query_params.get(self.limit_param)
        if raw is None:
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ApiError(
                "invalid", f"limit must be a whole number from 1 to {self.max_page_size}.", field=self.limit_param
            )
        return int(raw)

    def _cursor(self, request: Request, ordering: str, keys: list[Key]) -> tuple[list[Any], bool] | None:
        raw = request.query_params.get(self.cursor_param)
        if raw is None or raw == "":
            return None
        try:
            padded = raw + "=" * (-len(raw) % 4)
            data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
            if not isinstance(data, dict) or data.get("o") != ordering:
                raise ValueError("cursor of another ordering")
            values = data["v"]
            if not isinstance(values, list) or len(values) != len(keys):
                raise ValueError("wrong number of values")
            decoded = [_decode_value(value, key.kind) for value, key in zip(values, keys, strict=True)]
            return decoded, bool(data.get("r", False))
        except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
            # 404 like DRF's own cursor pagination: the page this cursor names does not exist.
            raise ApiError(
                "invalid_cursor",
                "This cursor is not one the API handed out for this ordering; start again without it.",
                field=self.cursor_param,
                status_code=404,
            ) from None

    def _make_cursor(self, ordering: str, keys: list[Key], row: Any, reverse: bool) -> str:
        # values() rows by key; objects and named tuples (a first page) by attribute.
        get = row.__getitem__ if isinstance(row, dict) else row.__getattribute__
        values = [_encode_value(get(key.alias), key.kind) for key in keys]
        payload = json.dumps({"o": ordering, "v": values, "r": reverse}, separators=(",", ":"))
        return base64.urlsafe_b64encode(payload.encode()).decode("ascii").rstrip("=")

    def _url(self, request: Request, cursor: str) -> str:
        params = request.query_params.copy()
        params[self.cursor_param] = cursor
        return request.build_absolute_uri(request.path) + "?" + urlencode(sorted(params.lists()), doseq=True)

    # -- paging ---------------------------------------------------------------------------
    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> list[Any]:
        self.request = request
        ordering = self._ordering(request, view)
        keys = self._orderings(view)[ordering]
        limit = self._limit(request)
        cursor = self._cursor(request, ordering, keys)
        reverse = bool(cursor and cursor[1])
        if cursor is None and getattr(queryset, "first_pages_prepared", False):
            rows = self._first_page(queryset, view, ordering, keys, limit + 1)
        else:
            ordered = self._ordered(queryset, keys, cursor)
            merge = getattr(request, "runs_merged_by", None)
            if merge is not None and keys == getattr(view, "merged_ordering", None):
                ordered = merged(ordered, *merge, keys, reverse, limit + 1)
            rows = list(ordered[: limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        if reverse:
            rows.reverse()
        self.next = self.previous = None
        if rows:
            if more or reverse:
                self.next = self._url(request, self._make_cursor(ordering, keys, rows[-1], False))
            if cursor is not None and (more or not reverse):
                self.previous = self._url(request, self._make_cursor(ordering, keys, rows[0], True))
        return rows

    @classmethod
    def _ordered(cls, queryset: QuerySet, keys: list[Key], cursor: tuple[list[Any], bool] | None) -> QuerySet:
        """``queryset`` with the keys annotated, in the ordering, from the cursor on."""
        annotations = {key.alias: key.expression for key in keys if key.expression is not None}
        if annotations:
            queryset = queryset.annotate(**annotations)
        reverse = bool(cursor and cursor[1])
        # A backward page walks the ordering in reverse from the cursor and is flipped after.
        order = [F(key.alias).asc() if key.descending == reverse else F(key.alias).desc() for key in keys]
        queryset = queryset.order_by(*order)
        if cursor is not None:
            queryset = queryset.filter(cls._after(keys, cursor[0], reverse))
        return queryset

    # The first page of a view's unfiltered values() list, by (view, ordering): the class of its
    # rows, a named tuple of its values, and the query, compiled once (kernelindex.prepared).
    _first_pages: dict[tuple[type, str], tuple[type, Prepared]] = {}

    def _first_page(self, queryset: QuerySet, view: Any, ordering: str, keys: list[Key], stop: int) -> list[Any]:
        """Rows ``[:stop]`` of ``queryset``, a view's whole list (``first_pages_prepared``: its
        values() rows, unfiltered), without a cursor, as named tuples: the values() fields in
        their order, then the keys'. Compiling the list's query was a fifth of the time of its
        most asked page, and building a dictionary of each row 7% of what was left."""
        entry = self._first_pages.get((type(view), ordering))
        if entry is None:
            names = (*queryset._fields, *(key.alias for key in keys if key.expression is not None))
            ordered = self._ordered(queryset, keys, None).values_list(*names)
            row = namedtuple(f"{queryset.model.__name__}Row", names)
            entry = self._first_pages[type(view), ordering] = (row, Prepared(lambda: ordered))
        row, prepared = entry
        return list(map(row._make, prepared.slice(0, stop)))

    @staticmethod
    def _after(keys: list[Key], values: list[Any], reverse: bool) -> Q:
        """Rows strictly after ``values`` in the ordering (before them when ``reverse``)."""
        condition = Q()
        equal = Q()
        for key, value in zip(keys, values, strict=True):
            forward = not key.descending
            if reverse:
                forward = not forward
            beyond = Q(**{f"{key.alias}__gt" if forward else f"{key.alias}__lt": value})
            condition |= equal & beyond
            equal &= Q(**{key.alias: value})
        return condition

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"next": self.next, "previous": self.previous, "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {
                "next": {"type": "string", "nullable": True, "format": "uri", "description": "The next page, or null."},
                "previous": {
                    "type": "string",
                    "nullable": True,
                    "format": "uri",
                    "description": "The previous page, or null.",
                },
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_param,
                "required": False,
                "in": "query",
                "description": "Opaque position from a previous page's next/previous link.",
                "schema": {"type": "string"},
            },
            {
                "name": self.limit_param,
                "required": False,
                "in": "query",
                "description": f"Rows per page (default {self.page_size}, at most {self.max_page_size}).",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size},
            },
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": f"Order of the rows (default {view.default_ordering}); nulls come last.",
                "schema": {"type": "string", "enum": list(view.orderings)},
            },
        ]


# The run columns a list filtered by several of their ids reads id by id (``merged``): each
# leads a newest-first index (runs.models), which a merge needs to read each id's rows in order.
MERGEABLE = frozenset({"environment_id", "benchmark_id", "source_id"})


def merged(queryset: QuerySet, column: str, ids: list[int], keys: list[Key], reverse: bool, stop: int) -> QuerySet:
    """``queryset`` (filtered by ``column`` among ``ids``, in ``keys``' order) narrowed to the
    first ``stop`` rows, found id by id: for each id its first ``stop`` rows in order, read from
    the index that leads with ``column`` (a LATERAL subquery per id), merged and cut.

    "column = ANY(ids)" reads that index but not in order, so PostgreSQL walked the newest-first
    index instead, past every run of other ids: ?architecture=sm_90 (5 environments) took 1.3 s
    at 1,000,000 runs. The page's own query then reads the rows by primary key: the same one
    query. (Few ids: one index descent and a page of rows each.)"""
    if connection.vendor != "postgresql":  # SQLite has no LATERAL; its lists are small
        return queryset
    branch = queryset.filter(**{column: RawSQL('"merge_ids"."id"', ())}).values("pk", *(key.alias for key in keys))
    try:
        sql, params = branch[:stop].query.sql_with_params()
    except EmptyResultSet:  # another filter names nothing (?gpu=nonesuch&architecture=sm_100)
        return queryset.none()
    order = ", ".join(f'"merged"."{key.alias}" {"DESC" if key.descending != reverse else "ASC"}' for key in keys)
    first = (
        f'SELECT "merged"."pk" FROM unnest(%s::bigint[]) AS "merge_ids"("id") '
        f'CROSS JOIN LATERAL ({sql}) AS "merged" ORDER BY {order} LIMIT {int(stop)}'
    )
    # "= ANY(ARRAY(…))": the first rows' keys computed once, then read by primary key. As
    # "IN (…)" PostgreSQL joined them to every run the filters matched (1.6 s for sol-execbench).
    return queryset.filter(RawSQL(f'"runs_run"."id" = ANY(ARRAY({first}))', (ids, *params), BooleanField()))
