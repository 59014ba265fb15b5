"""Whole-site backups: every table (runs, attestations, reports, the moderation log, users, API
tokens, sign-in records, sessions, the cache table), for ``manage.py backup`` and ``restore``.

Two formats:

- ``native`` (the default): the database's own copy. SQLite: one SQLite file written with the
  online backup API (consistent while the site serves). PostgreSQL: ``pg_dump --format=custom``,
  restored with ``pg_restore``. Same database kind in and out; exact, fast; use it for backups.
- ``json``: Django's ``dumpdata`` with natural foreign keys (content types and permissions are
  made again by ``migrate`` on the target), times to the microsecond (exactjson). Works across
  database kinds: use it to move a site from SQLite to PostgreSQL. The cache table is not
  carried (``createcachetable`` makes it empty), nor the dates migrations were applied.

Restores go into an empty database only: nothing is merged.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from django.core import serializers
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections

FORMATS = ("native", "json")
# Rebuilt by `migrate` on the target; the dump refers to them by natural key.
JSON_EXCLUDE = ["contenttypes", "auth.permission"]


def _vendor(alias: str) -> str:
    return connections[alias].vendor


def _postgres_env(alias: str) -> tuple[list[str], dict[str, str]]:
    """libpq connection arguments and environment (the password never goes on a command line)."""
    settings = connections[alias].settings_dict
    args = ["--dbname", settings["NAME"]]
    if settings.get("HOST"):
        args += ["--host", settings["HOST"]]
    if settings.get("PORT"):
        args += ["--port", str(settings["PORT"])]
    if settings.get("USER"):
        args += ["--username", settings["USER"]]
    env = dict(os.environ)
    if settings.get("PASSWORD"):
        env["PGPASSWORD"] = settings["PASSWORD"]
    return args, env


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise CommandError(f"{name} is not installed (Debian: apt-get install postgresql-client).")
    return path


def _sqlite_connection(alias: str) -> sqlite3.Connection:
    connection = connections[alias]
    connection.ensure_connection()
    return connection.connection


def user_tables(alias: str) -> list[str]:
    with connections[alias].cursor() as cursor:
        return [name for name in connections[alias].introspection.table_names(cursor) if not name.startswith("sqlite_")]


def backup(path: Path, *, fmt: str = "native", alias: str = "default") -> None:
    if path.exists():
        raise CommandError(f"{path} exists: a backup never overwrites a file.")
    if fmt == "json":
        serializers.register_serializer("exact-json", "kernelindex.management.exactjson")
        call_command(
            "dumpdata",
            format="exact-json",
            natural_foreign=True,
            exclude=JSON_EXCLUDE,
            output=str(path),
            database=alias,
            verbosity=0,
        )
    elif _vendor(alias) == "sqlite":
        target = sqlite3.connect(path)
        try:
            _sqlite_connection(alias).backup(target)
        finally:
            target.close()
    elif _vendor(alias) == "postgresql":
        args, env = _postgres_env(alias)
        _run([_tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges", "--file", str(path), *args], env)
    else:
        raise CommandError(f"No native backup for {_vendor(alias)}: use --format json.")


def restore(path: Path, *, fmt: str = "native", alias: str = "default") -> None:
    if not path.is_file():
        raise CommandError(f"{path} is not a file.")
    tables = user_tables(alias)
    if fmt == "json":
        # The schema comes from the code's migrations; the empty database may be new or migrated.
        if tables and _has_rows_beyond_migrations(alias):
            raise CommandError("The database is not empty: restore into a new, empty database.")
        call_command("migrate", database=alias, interactive=False, verbosity=0)
        call_command("createcachetable", database=alias, verbosity=0)
        with tempfile.TemporaryDirectory() as folder:
            # loaddata knows the format by the file's extension; the backup's name may have none.
            fixture = Path(folder) / "site.json"
            fixture.symlink_to(path.resolve())
            call_command("loaddata", str(fixture), database=alias, verbosity=0)
        return
    if tables:
        raise CommandError(f"The database has {len(tables)} tables: restore into a new, empty database.")
    if _vendor(alias) == "sqlite":
        source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            source.backup(_sqlite_connection(alias))
        finally:
            source.close()
    elif _vendor(alias) == "postgresql":
        args, env = _postgres_env(alias)
        _run(
            [
                _tool("pg_restore"),
                "--no-owner",
                "--no-privileges",
                "--exit-on-error",
                "--single-transaction",
                *args,
                str(path),
            ],
            env,
        )
    else:
        raise CommandError(f"No native restore for {_vendor(alias)}: use --format json.")


def _has_rows_beyond_migrations(alias: str) -> bool:
    """True when a table holds rows that `migrate` did not put there (users, runs, ...)."""
    from django.apps import apps

    made_by_migrate = {"contenttypes.contenttype", "auth.permission", "auth.group", "auth.group_permissions"}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.label_lower in made_by_migrate or not model._meta.managed:
            continue
        if model._meta.db_table in user_tables(alias) and model._default_manager.using(alias).exists():
            return True
    return False


def _run(command: list[str], env: dict[str, str]) -> None:
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise CommandError(f"{Path(command[0]).name} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
