"""Bulk inserts: ``COPY`` on PostgreSQL, ``bulk_create`` elsewhere."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.utils import timezone


def model_attributes(obj: Any) -> dict[str, Any]:
    """A model instance's column values for ``insert_rows`` (automatic timestamps left to it)."""
    return {
        f.attname: getattr(obj, f.attname)
        for f in obj._meta.concrete_fields
        if not f.primary_key and not getattr(f, "auto_now", False) and not getattr(f, "auto_now_add", False)
    }


def insert_rows(model: type, rows: list[dict[str, Any]]) -> list[int]:
    """Insert rows given as {attname: value} and return their primary keys, in order.

    On PostgreSQL this is ``COPY … FROM STDIN`` with primary keys drawn from the table's
    sequence beforehand: several times faster than a multi-row INSERT for 100,000 runs and
    their revisions, and no model instances are built. Elsewhere it is ``bulk_create``. Both
    fill unset fields from the model's defaults (``auto_now`` fields with the current time)
    and leave validation to the database constraints, as ``bulk_create`` does.
    """
    if not rows:
        return []
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    now = timezone.now()
    # Each column's value when a row does not give it: the current time for automatic
    # timestamps, the field's default otherwise.
    defaults = [
        now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default() for f in fields
    ]
    columns = list(zip([f.attname for f in fields], defaults, strict=True))
    if connection.vendor != "postgresql":
        objs = [model(**{name: row.get(name, default) for name, default in columns}) for row in rows]
        model.objects.bulk_create(objs, batch_size=1000)
        return [obj.pk for obj in objs]
    table = model._meta.db_table
    quote = connection.ops.quote_name
    json_columns = [i for i, f in enumerate(fields) if f.get_internal_type() == "JSONField"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, model._meta.pk.column, len(rows)],
        )
        pks = [pk for (pk,) in cursor.fetchall()]
        names = ", ".join(quote(c) for c in [model._meta.pk.column] + [f.column for f in fields])
        with cursor.cursor.copy(f"COPY {quote(table)} ({names}) FROM STDIN") as copy:
            for pk, row in zip(pks, rows, strict=True):
                values = [pk] + [row.get(name, default) for name, default in columns]
                for index in json_columns:
                    values[index + 1] = json.dumps(values[index + 1])
                copy.write_row(values)
    return pks
