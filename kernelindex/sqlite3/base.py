"""Django's SQLite backend, with its rewrite of each query's placeholders done once per text.

Python's sqlite3 takes ``?`` where Django writes ``%s``, so Django's backend rewrites every
query with a regular expression before it runs it: 40 µs for the 3,500 characters of a run
list's nine-table join, each time, a fifth of what SQLite then took to run it. A page asks the
same few query texts on every request (kernelindex.prepared keeps even the same string), so the
rewritten text is kept per query text (an LRU of 1,024). Everything else is Django's backend;
settings select this one wherever DATABASE_URL names SQLite.

Its dates are read in one C call too. SQLite keeps a date as text in UTC ("2025-03-01
12:00:00.5"); Django parses it (``datetime.fromisoformat``) and then makes it aware with
``replace(tzinfo=UTC)``, whose keyword arguments CPython parses by looking up each of its eight
names: 4,000 instructions a date, more than the parse, and an API list reads 230 dates. With
"+00:00" appended ``fromisoformat`` gives the same aware value at once; any other text (an
offset of its own, a bare date) goes Django's way (tests/kernelindex/test_sqlite_backend.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from django.db.backends.sqlite3 import base, operations


@lru_cache(maxsize=1024)
def _qmark(query: str) -> str:
    """What SQLiteCursorWrapper.convert_query makes of a "format"-style query."""
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None:
            return _qmark(query)
        return super().convert_query(query, param_names=param_names)


class DatabaseOperations(operations.DatabaseOperations):
    def convert_datetimefield_value(self, value: Any, expression: Any, connection: Any) -> Any:
        # connection.timezone is UTC unless settings give the database a TIME_ZONE of its own.
        if value.__class__ is str and self.connection.timezone is UTC:
            try:
                parsed = datetime.fromisoformat(value + "+00:00")
            except ValueError:
                parsed = None
            if parsed is not None and parsed.tzinfo is UTC:  # "2025-03-01+00:00" reads as naive
                return parsed
        return super().convert_datetimefield_value(value, expression, connection)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def create_cursor(self, name: str | None = None) -> Any:
        return self.connection.cursor(factory=SQLiteCursorWrapper)
