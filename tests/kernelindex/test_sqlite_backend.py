"""kernelindex.sqlite3: Django's SQLite backend with each query text's placeholders rewritten
once; the rewritten text is Django's own."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection
from django.db.backends.sqlite3.base import SQLiteCursorWrapper as DjangoCursor

from kernelindex.sqlite3.base import SQLiteCursorWrapper, _qmark

QUERIES = [
    "SELECT 1",
    "SELECT %s, %s FROM t WHERE a = %s",
    "SELECT '100%%' AS p, %s WHERE b LIKE '%%x%%'",
    "SELECT %%s, %s",
    'SELECT "a" FROM "b" WHERE "c" IN (%s, %s, %s) ORDER BY 2 DESC LIMIT %s OFFSET %s',
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_rewrite_is_djangos(query: str) -> None:
    ours = sqlite3.connect(":memory:").cursor(factory=SQLiteCursorWrapper)
    theirs = sqlite3.connect(":memory:").cursor(factory=DjangoCursor)
    assert ours.convert_query(query) == theirs.convert_query(query) == ours.convert_query(query) == _qmark(query)
    named = "SELECT %(a)s, %(b)s"
    assert ours.convert_query(named, param_names=["a", "b"]) == "SELECT :a, :b"


@pytest.mark.django_db
def test_the_sqlite_database_runs_through_it() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the default database is not SQLite: this backend is not in use")
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, SQLiteCursorWrapper)
        cursor.execute("SELECT %s || '%%', %s", ["50", 7])
        assert cursor.fetchone() == ("50%", 7)


DATES = [
    "2025-03-01 12:00:00",
    "2025-03-01 12:00:00.5",
    "2025-03-01 12:00:00.123456",
    "0001-01-01 00:00:00",
    "9999-12-31 00:00:00",
    "2025-03-01T12:00:00",
    "2025-03-01 12:00:00+02:00",  # an offset of its own: Django's way
    "2025-03-01",  # a bare date: Django's way
]


@pytest.mark.parametrize("text", DATES)
def test_a_date_reads_as_djangos_backend_reads_it(text: str) -> None:
    """Fetched from a datetime column (Python's sqlite3 converter, then the backend's) or
    computed (text, the backend's converter alone): the value Django's backend gives."""
    from django.db.backends.sqlite3.base import decoder
    from django.db.backends.sqlite3.operations import DatabaseOperations as DjangoOperations
    from django.db.models import DateTimeField
    from django.utils.dateparse import parse_datetime

    from kernelindex.sqlite3.base import DatabaseOperations, _fetched_datetime

    field = DateTimeField()
    ours, theirs = DatabaseOperations(connection), DjangoOperations(connection)
    fetched = _fetched_datetime(text.encode())
    for mine, django in (
        (ours.convert_datetimefield_value(fetched, field, connection), decoder(parse_datetime)(text.encode())),
        (ours.convert_datetimefield_value(text, field, connection), text),
    ):
        expected = theirs.convert_datetimefield_value(django, field, connection)
        assert mine == expected and mine.tzinfo == expected.tzinfo and mine.utcoffset() == expected.utcoffset()
    assert ours.convert_datetimefield_value(None, field, connection) is None


@pytest.mark.django_db
def test_dates_come_back_aware_in_utc() -> None:
    from datetime import UTC, datetime

    from runs.models import Run
    from tests.factories import sol_group

    sol_group(2)
    observed = datetime(2025, 3, 1, 12, 30, 0, 500, tzinfo=UTC)
    Run.objects.update(observed_at=observed)
    assert set(Run.objects.values_list("observed_at", flat=True)) == {observed}
    assert {run.observed_at.tzinfo for run in Run.objects.all()} == {UTC}


def test_a_database_time_zone_of_its_own_is_refused() -> None:
    from django.core.exceptions import ImproperlyConfigured

    from kernelindex.sqlite3.base import DatabaseWrapper

    wrapper = DatabaseWrapper({**connection.settings_dict, "NAME": ":memory:", "TIME_ZONE": "Europe/Paris"})
    with pytest.raises(ImproperlyConfigured, match="TIME_ZONE"):
        wrapper.get_connection_params()


@pytest.mark.django_db
def test_published_runs_are_asked_for_with_the_literal_their_indexes_name() -> None:
    """A bound ``visibility = ?`` made SQLite compile the statement again at every execution
    (kernelindex.lookups.InlinedExact): the text carries the literal, and the statement is compiled
    once however often it runs."""
    from django.test.utils import CaptureQueriesContext

    from runs.models import Run
    from tests.factories import sol_group

    sol_group(3)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            assert len(Run.objects.visible().order_by("public_id")) == 3
            assert Run.objects.filter(visibility="it's").count() == 0  # quoted as SQL quotes
    if connection.vendor != "sqlite":
        return
    assert all("\"visibility\" = 'published'" in q["sql"] for q in queries.captured_queries[::2])
    with connection.cursor() as cursor:
        statements = cursor.connection.execute("SELECT sql, run, reprep FROM sqlite_stmt").fetchall()
    listed = [(run, reprep) for sql, run, reprep in statements if sql == queries.captured_queries[0]["sql"]]
    assert listed == [(3, 0)]


def test_without_time_zones_a_fetched_date_stays_naive() -> None:
    from django.test import override_settings

    from kernelindex.sqlite3.base import _fetched_datetime

    assert _fetched_datetime(b"2025-03-01 12:00:00").tzinfo is not None
    with override_settings(USE_TZ=False):
        assert _fetched_datetime(b"2025-03-01 12:00:00").tzinfo is None
    assert _fetched_datetime(b"2025-03-01 12:00:00").tzinfo is not None
