"""A database cache whose ``incr`` is atomic.

Django's ``DatabaseCache.incr`` is a ``get`` followed by a ``set``: two gunicorn workers can
read the same count and both write count + 1, so a rate limit built on it lets parallel
requests through. Here the read and the write happen in one transaction holding the row's
lock (``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the transaction starts with
``BEGIN IMMEDIATE`` — see settings — which takes the database's write lock before reading).
Redis (django-redis) needs none of this: its ``incr`` is Redis ``INCR``.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterable
from typing import Any

from django.core.cache.backends.db import DatabaseCache
from django.db import connections, models, router, transaction
from django.utils.timezone import now as tz_now

# What a stored expiry time is read as. Built once: Django's get_many builds it (a DateTimeField)
# on every call, which cost more than the rest of reading the data version a page asks for.
_EXPIRES = models.Expression(output_field=models.DateTimeField())


def _expires(connection: Any, value: Any) -> Any:
    """A row's ``expires`` column as an aware datetime, through the backend's converters."""
    for converter in connection.ops.get_db_converters(_EXPIRES) + _EXPIRES.get_db_converters(connection):
        value = converter(value, _EXPIRES, connection)
    return value


class AtomicDatabaseCache(DatabaseCache):
    def get_many(self, keys: Iterable[str], version: int | None = None) -> dict[str, Any]:
        """Django's ``DatabaseCache.get_many`` (``get`` is one key of it), reading expiry times
        through ``_EXPIRES``: every public page reads the data version (kernelindex.pagecache),
        and Django's own took 72 µs of it."""
        key_map = {self.make_and_validate_key(key, version=version): key for key in keys}
        if not key_map:
            return {}
        connection = connections[router.db_for_read(self.cache_model_class)]
        quote_name = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {quote_name('cache_key')}, {quote_name('value')}, {quote_name('expires')} "
                f"FROM {quote_name(self._table)} "
                f"WHERE {quote_name('cache_key')} IN ({', '.join(['%s'] * len(key_map))})",
                list(key_map),
            )
            rows = cursor.fetchall()
        result, expired = {}, []
        now = tz_now()
        for key, value, expires in rows:
            if _expires(connection, expires) < now:
                expired.append(key)
            else:
                result[key_map[key]] = pickle.loads(base64.b64decode(connection.ops.process_clob(value).encode()))
        self._base_delete_many(expired)
        return result

    def incr(self, key: str, delta: int = 1, version: int | None = None) -> int:
        key = self.make_and_validate_key(key, version=version)
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        quote_name = connection.ops.quote_name
        table = quote_name(self._table)
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        with transaction.atomic(using=db), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {quote_name('value')}, {quote_name('expires')} FROM {table} "
                f"WHERE {quote_name('cache_key')} = %s{lock}",
                [key],
            )
            row = cursor.fetchone()
            if row is None:
                raise ValueError(f"Key '{key}' not found")
            value, expires = row
            if _expires(connection, expires) < tz_now():
                raise ValueError(f"Key '{key}' not found")
            current = pickle.loads(base64.b64decode(connection.ops.process_clob(value).encode()))
            new_value = current + delta
            encoded = base64.b64encode(pickle.dumps(new_value, self.pickle_protocol)).decode("latin1")
            cursor.execute(
                f"UPDATE {table} SET {quote_name('value')} = %s WHERE {quote_name('cache_key')} = %s",
                [encoded, key],
            )
        return new_value

    def decr(self, key: str, delta: int = 1, version: int | None = None) -> int:
        return self.incr(key, -delta, version)
