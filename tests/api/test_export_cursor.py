"""Exports stream from a cursor PostgreSQL does not materialise first.

Outside a transaction (a request, ``manage.py export``) Django declares a server-side cursor
WITH HOLD, and PostgreSQL computes and stores the whole result before the first row leaves:
an export of 1,000,000 runs sent its first row after 23.6 s. ``runs.exports.streamed`` reads
inside a transaction instead. The test needs autocommit, as a request has (transaction=True).

While an export is being read, the session's open cursors (``pg_cursors``) must include its
own, and none may be holdable: this holds whether the SQL is bound on the client or the server
(with server-side binding the logged SQL is the SELECT, not the DECLARE).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from django.db import connection

from ingest.pipeline import export_lines
from tests.factories import sol_group

EXPORTS = [
    "/api/v1/runs/export/csv/",
    "/api/v1/runs/export/jsonl/",
    "/api/v1/runs/export/bundles/",
    "/runs/?format=csv",
    "/runs/?format=jsonl",
]


def read_watching_cursors(chunks: Iterable[Any]) -> tuple[list[Any], list[bool]]:
    """Every chunk, and the holdability of each cursor open while one was being read."""
    read, holdable = [], []
    for chunk in chunks:
        read.append(chunk)
        with connection.cursor() as cursor:
            cursor.execute("SELECT is_holdable FROM pg_cursors")
            holdable.extend(flag for (flag,) in cursor.fetchall())
    return read, holdable


@pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side cursors are PostgreSQL's")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_exports_read_a_cursor_declared_inside_a_transaction(client: Any) -> None:
    sol_group(5)
    for url in EXPORTS:
        response = client.get(url)
        assert response.status_code == 200, url
        chunks, holdable = read_watching_cursors(response.streaming_content)
        assert len(b"".join(chunks).decode().splitlines()) >= 5, url
        assert holdable and not any(holdable), (url, holdable)
    lines, holdable = read_watching_cursors(export_lines())  # manage.py export's lines
    assert len(lines) == 5
    assert holdable and not any(holdable), holdable
