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
