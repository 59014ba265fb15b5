"""Django's PostgreSQL backend, with its dates read by psycopg's C loader.

Django loads every ``timestamptz`` through a Python subclass of psycopg's pure-Python loader,
so that each date comes back in the connection's time zone (``replace(tzinfo=...)``), and psycopg
can only swap a loader for its C build when the class registered is psycopg's own. An API list
reads 153 dates, and their regular-expression parse and replace were a quarter of its fetch. In
the one time zone this site uses (USE_TZ with the database's TIME_ZONE unset: Django sets the
connection to UTC), psycopg's own loader already gives what Django's does, a date in
``datetime.timezone.utc``, so it is registered instead (tests/kernelindex/test_postgresql_backend.py).
Any other time zone is Django's backend unchanged. Settings select this one wherever
DATABASE_URL names PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC
from functools import cache
from typing import Any

from django.db.backends.postgresql import base
from django.db.backends.postgresql.psycopg_any import get_adapters_template, register_tzloader
from django.utils.asyncio import async_unsafe
from psycopg import adapt
from psycopg.pq import Format
from psycopg.types.datetime import TimestamptzLoader


@cache
def _utc_adapters() -> adapt.AdaptersMap:
    """Django's adapters for a UTC connection, with psycopg's own (C) timestamptz loader."""
    adapters = adapt.AdaptersMap(get_adapters_template(True, UTC))
    adapters.register_loader("timestamptz", TimestamptzLoader)
    return adapters


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        if self.timezone is UTC and self.timezone_name == "UTC":
            params["context"] = _utc_adapters()
        return params

    @async_unsafe
    def create_cursor(self, name: str | None = None) -> Any:
        """Django's. psycopg's own loader reads a date in the connection's time zone, which Django
        keeps at ``timezone_name``: UTC wherever the connection has that loader; so Django's
        loader goes on the cursor, as Django's backend does it, wherever the time zone differs
        (a test that overrides TIME_ZONE or USE_TZ on an open connection)."""
        if not name:
            cursor = self.connection.cursor()
        elif self.settings_dict["OPTIONS"].get("server_side_binding") is True:
            # Holdable in autocommit mode, when it is used outside a transaction.
            cursor = self.connection.cursor(name, scrollable=False, withhold=self.connection.autocommit)
        else:
            cursor = base.ServerSideCursor(
                self.connection, name=name, scrollable=False, withhold=self.connection.autocommit
            )
        loader = self.connection.adapters.get_loader(base.TIMESTAMPTZ_OID, Format.TEXT)
        if self.timezone != getattr(loader, "timezone", UTC):
            register_tzloader(self.timezone, cursor)
        return cursor
