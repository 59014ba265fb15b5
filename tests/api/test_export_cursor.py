"""Exports stream from a cursor PostgreSQL does not materialise first.

Outside a transaction (a request, ``manage.py export``) Django declares a server-side cursor
WITH HOLD, and PostgreSQL computes and stores the whole result before the first row leaves:
an export of 1,000,000 runs sent its first row after 23.6 s. ``runs.exports.streamed`` reads
inside a transaction instead. The test needs autocommit, as a request has (transaction=True).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ingest.pipeline import export_lines
from tests.factories import sol_group

EXPORTS = [
    "/api/v1/runs/export/csv/",
    "/api/v1/runs/export/jsonl/",
    "/api/v1/runs/export/bundles/",
    "/runs/?format=csv",
    "/runs/?format=jsonl",
]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side cursors are PostgreSQL's")
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_exports_read_a_cursor_declared_inside_a_transaction(client: Any) -> None:
    sol_group(5)
    for url in EXPORTS:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
            assert response.status_code == 200, url
            lines = b"".join(response.streaming_content).decode().splitlines()
        assert len(lines) >= 5, url
        declared = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("DECLARE")]
        assert declared and not [sql for sql in declared if "WITH HOLD" in sql], (url, declared)
    with CaptureQueriesContext(connection) as captured:
        assert len(list(export_lines())) == 5  # manage.py export's lines
    declared = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("DECLARE")]
    assert declared and not [sql for sql in declared if "WITH HOLD" in sql], declared
