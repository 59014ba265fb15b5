"""Updates of many rows at once: ``update_rows(model, objects, fields)``.

Django's ``bulk_update`` writes one ``CASE WHEN pk = … THEN …`` per row and field; building and
compiling those expressions took most of the figures' refresh after a 100,000-run import (10 s
of 60). On PostgreSQL this is one ``UPDATE … FROM unnest(%s::type[], …)`` per 20,000 rows, each
column sent as one array; elsewhere it is ``bulk_update``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connection

CHUNK = 20_000


def update_rows(model: Any, objects: Sequence[Any], fields: Sequence[str]) -> None:
    """Write ``fields`` of ``objects`` (instances of ``model`` with their primary keys)."""
    if not objects:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_update(objects, list(fields), batch_size=1000)
        return
    quote = connection.ops.quote_name
    pk = model._meta.pk
    columns = [pk] + [model._meta.get_field(name) for name in fields]
    arrays = ", ".join(
        f"%s::{column.rel_db_type(connection) if column is pk else column.db_type(connection)}[]" for column in columns
    )
    names = ", ".join(quote(column.column) for column in columns)
    assignments = ", ".join(f"{quote(column.column)} = new.{quote(column.column)}" for column in columns[1:])
    sql = (
        f"UPDATE {quote(model._meta.db_table)} AS old SET {assignments} "
        f"FROM unnest({arrays}) AS new({names}) WHERE old.{quote(pk.column)} = new.{quote(pk.column)}"
    )
    with connection.cursor() as cursor:
        for start in range(0, len(objects), CHUNK):
            chunk = objects[start : start + CHUNK]
            cursor.execute(
                sql,
                [
                    [column.get_db_prep_save(getattr(obj, column.attname), connection) for obj in chunk]
                    for column in columns
                ],
            )


@contextlib.contextmanager
def index_reads_only(cursor: Any) -> Iterator[None]:
    """On PostgreSQL, plan the statements run inside without sequential scans and sorts, then
    restore the settings (``set_config(…, true)``: the transaction's own, undone by its end or
    a rollback if anything fails).

    Inside an import's own transaction the runs table's statistics are those of before it: after
    20,000 runs were written into a fresh table the planner chose to read the whole table for
    every submitter of the walk (153 s). Only an index answers "the next submitter" well, so it
    is told (``runs.counts``), and so are an import's lookups of runs by key
    (``ingest.engine``)."""
    if connection.vendor != "postgresql":
        yield
        return
    cursor.execute(
        "SELECT current_setting('enable_seqscan'), current_setting('enable_sort'),"
        " set_config('enable_seqscan', 'off', true), set_config('enable_sort', 'off', true)"
    )
    seqscan, sort, _, _ = cursor.fetchone()
    yield
    cursor.execute(
        "SELECT set_config('enable_seqscan', %s, true), set_config('enable_sort', %s, true)", [seqscan, sort]
    )


@contextlib.contextmanager
def client_bound() -> Iterator[None]:
    """On PostgreSQL, bind values on the client and prepare nothing inside (Django's default
    cursor, psycopg's ``prepare_threshold`` None), then restore the connection's settings.

    Pages gain from server-side binding and prepared statements (kernelindex.settings); an
    import does not: its lookups run once a batch with arrays of a new size each time, and its
    writes bind thousands of values. With both on for the import, 100,000 runs took 29.9 and
    33.7 s against 26.5 and 25.3 s with PG_PREPARE_THRESHOLD=off (bench/import_bench.py,
    interleaved). With this, the two still differed by 4-10% in three rounds of four, within
    this machine's noise but not explained."""
    if connection.vendor != "postgresql":
        yield
        return
    from django.db.backends.postgresql.base import Cursor  # Django's client-side binding cursor

    connection.ensure_connection()
    raw = connection.connection
    before = raw.cursor_factory, raw.prepare_threshold
    raw.cursor_factory, raw.prepare_threshold = Cursor, None
    try:
        yield
    finally:
        raw.cursor_factory, raw.prepare_threshold = before
