"""kernelindex.postgresql: Django's PostgreSQL backend with dates read by psycopg's C loader; a
date reads as Django's backend reads it."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from django.test import override_settings

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="this backend is PostgreSQL's"),
    pytest.mark.django_db,
]

DATE = "SELECT '2025-03-01 12:00:00.5+02'::timestamptz"


def read(cursor) -> datetime:
    cursor.execute(DATE)
    return cursor.fetchone()[0]


def test_the_connection_reads_dates_with_psycopgs_own_loader() -> None:
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(psycopg.postgres.types["timestamptz"].oid, 0)
    if psycopg.pq.__impl__ != "python":
        assert loader.__module__.endswith("._psycopg")  # psycopg_binary's or psycopg_c's build
    assert not hasattr(loader, "timezone")  # not Django's loader


def test_a_date_reads_as_djangos_backend_reads_it() -> None:
    with connection.cursor() as cursor:
        ours = read(cursor)
    with connection.cursor() as cursor:
        register_tzloader(connection.timezone, cursor.cursor)  # what Django's backend registers
        theirs = read(cursor)
    assert ours == theirs == datetime(2025, 3, 1, 10, 0, 0, 500000, tzinfo=UTC)
    assert ours.tzinfo is theirs.tzinfo is UTC


def test_a_named_cursor_reads_the_same() -> None:
    with connection.chunked_cursor() as cursor:
        assert read(cursor).tzinfo is UTC


def test_another_time_zone_goes_djangos_way() -> None:
    with override_settings(USE_TZ=False), connection.cursor() as cursor:
        naive = read(cursor)
    assert naive == datetime(2025, 3, 1, 10, 0, 0, 500000) and naive.tzinfo is None
    with connection.cursor() as cursor:
        assert read(cursor).tzinfo is UTC
