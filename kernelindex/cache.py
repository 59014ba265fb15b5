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

from django.core.cache.backends.db import DatabaseCache
from django.db import connections, models, router, transaction
from django.utils.timezone import now as tz_now


class AtomicDatabaseCache(DatabaseCache):
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
            expression = models.Expression(output_field=models.DateTimeField())
            for converter in connection.ops.get_db_converters(expression) + expression.get_db_converters(connection):
                expires = converter(expires, expression, connection)
            if expires < tz_now():
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
