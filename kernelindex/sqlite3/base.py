"""Django's SQLite backend, with its rewrite of each query's placeholders done once per text.

Python's sqlite3 takes ``?`` where Django writes ``%s``, so Django's backend rewrites every
query with a regular expression before it runs it: 40 µs for the 3,500 characters of a run
list's nine-table join, each time, a fifth of what SQLite then took to run it. A page asks the
same few query texts on every request (kernelindex.prepared keeps even the same string), so the
rewritten text is kept per query text (an LRU of 1,024). Everything else is Django's backend;
settings select this one wherever DATABASE_URL names SQLite.

Its dates are read in one C call too. SQLite keeps a date as text in UTC ("2025-03-01
12:00:00.5"). Python's sqlite3 parses a column declared ``datetime`` with Django's
``parse_datetime`` as it fetches the row, and Django's converter then makes the naive value
aware with ``replace(tzinfo=UTC)``, whose keyword arguments CPython parses by looking up each of
its eight names: 4,000 instructions a date, more than the parse, and an API list reads 230
dates. Here the fetch parses ``text + "+00:00"`` with ``datetime.fromisoformat``, which gives the
aware value at once, and the converter keeps it; a computed date (``COALESCE``), which comes as
text, is read the same way. Any other text (an offset of its own, a bare date) goes Django's way
(tests/kernelindex/test_sqlite_backend.py). A database ``TIME_ZONE`` of its own is refused.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db.backends.sqlite3 import base, operations
from django.dispatch import receiver
from django.utils.dateparse import parse_datetime


@lru_cache(maxsize=1024)
def _qmark(query: str) -> str:
    """What SQLiteCursorWrapper.convert_query makes of a "format"-style query."""
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None:
            return _qmark(query)
        return super().convert_query(query, param_names=param_names)


def _aware(text: str) -> datetime | None:
    """A date SQLite holds, as the aware UTC value Django makes of it; None for any other text."""
    try:
        parsed = datetime.fromisoformat(text + "+00:00")
    except ValueError:
        return None
    return parsed if parsed.tzinfo is UTC else None  # "2025-03-01+00:00" reads as naive


# settings.USE_TZ, read once a change (an attribute of the lazy settings is a Python call, and an
# API list reads 230 dates).
_use_tz = settings.USE_TZ


@receiver(setting_changed)
def _setting_changed(*, setting: str, value: Any, **kwargs: Any) -> None:
    global _use_tz
    if setting == "USE_TZ":
        _use_tz = value


def _fetched_datetime(raw: bytes) -> datetime | None:
    """Python's sqlite3 converter for columns declared datetime (Django's: ``parse_datetime``)."""
    text = raw.decode()
    return (_aware(text) if _use_tz else None) or parse_datetime(text)


sqlite3.register_converter("datetime", _fetched_datetime)
sqlite3.register_converter("timestamp", _fetched_datetime)


class DatabaseOperations(operations.DatabaseOperations):
    def convert_datetimefield_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if value.__class__ is datetime and value.tzinfo is UTC:  # aware: Django's keeps it too
            return value
        if value.__class__ is str and _use_tz:
            return _aware(value) or super().convert_datetimefield_value(value, expression, connection)
        return super().convert_datetimefield_value(value, expression, connection)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def get_connection_params(self) -> dict[str, Any]:
        if self.settings_dict.get("TIME_ZONE") is not None:
            raise ImproperlyConfigured("kernelindex.sqlite3 reads dates as UTC: leave the database's TIME_ZONE unset")
        return super().get_connection_params()

    def create_cursor(self, name: str | None = None) -> Any:
        return self.connection.cursor(factory=SQLiteCursorWrapper)
