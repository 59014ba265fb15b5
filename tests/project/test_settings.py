"""Settings read from the environment fail loudly on what production must not run with.

Each case imports the settings in a fresh interpreter, so the environment it sets is the only one
the settings module sees (the test process's own settings are already loaded).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def load_settings(**env: str) -> subprocess.CompletedProcess[str]:
    """Set up Django with exactly these variables on top of a clean environment."""
    clean = {key: value for key, value in os.environ.items() if key not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    clean.update(env, DJANGO_SETTINGS_MODULE="kernelindex.settings")
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=clean, capture_output=True, text=True, timeout=60)


def test_it_refuses_to_start_without_a_secret_key_when_debug_is_off() -> None:
    result = load_settings(DEBUG="0")
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set when DEBUG is off." in result.stderr


def test_it_refuses_an_empty_secret_key_when_debug_is_off() -> None:
    result = load_settings(DEBUG="false", SECRET_KEY="")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_it_starts_with_debug_off_and_a_secret_key() -> None:
    result = load_settings(DEBUG="0", SECRET_KEY="a-production-secret")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False a-production-secret"


def test_it_uses_a_development_key_only_with_debug_on() -> None:
    result = load_settings(DEBUG="1")
    assert result.returncode == 0, result.stderr
    debug, key = result.stdout.split()
    assert debug == "True"
    assert key.startswith("dev-insecure-")


def test_it_rejects_a_debug_value_that_is_not_a_boolean() -> None:
    result = load_settings(DEBUG="maybe", SECRET_KEY="x")
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_a_sqlite_site_writes_ahead_and_commits_without_waiting_for_the_disk(tmp_path: Path) -> None:
    """Several gunicorn workers share the embedded database: pages read while a write goes on,
    a commit (the API throttle's, on every request) does not wait for the disk, and pages are
    read through a memory map (each write elsewhere empties a connection's page cache)."""
    database = tmp_path / "site.sqlite3"
    code = (
        "import django; django.setup(); from django.db import connection; cursor = connection.cursor(); "
        "print(*(cursor.execute(f'PRAGMA {name}').fetchone()[0] for name in ('journal_mode', 'synchronous', "
        "'mmap_size')))"
    )
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env.update(DATABASE_URL=f"sqlite:///{database}", DEBUG="1", DJANGO_SETTINGS_MODULE="kernelindex.settings")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["wal", "1", str(2**30)]  # synchronous 1 = NORMAL
