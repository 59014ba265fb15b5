"""Django's SQLite backend, with its rewrite of each query's placeholders done once per text.

Python's sqlite3 takes ``?`` where Django writes ``%s``, so Django's backend rewrites every
query with a regular expression before it runs it: 40 µs for the 3,500 characters of a run
list's nine-table join, each time, a fifth of what SQLite then took to run it. A page asks the
same few query texts on every request (kernelindex.prepared keeps even the same string), so the
rewritten text is kept per query text (an LRU of 1,024). Everything else is Django's backend;
settings select this one wherever DATABASE_URL names SQLite.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db.backends.sqlite3 import base


@lru_cache(maxsize=1024)
def _qmark(query: str) -> str:
    """What SQLiteCursorWrapper.convert_query makes of a "format"-style query."""
    return base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None:
            return _qmark(query)
        return super().convert_query(query, param_names=param_names)


class DatabaseWrapper(base.DatabaseWrapper):
    def create_cursor(self, name: str | None = None) -> Any:
        return self.connection.cursor(factory=SQLiteCursorWrapper)
