"""Fixtures for the website tests.

``site_url`` serves the real site with gunicorn (2 workers) on a temporary SQLite file that
``manage.py migrate``, ``createcachetable``, ``import data/`` and ``collectstatic`` prepared,
with DEBUG off, the way ``scripts/serve`` does.
``site_manage`` runs any manage.py command against that same database (the attestation tests
use it to create a moderator). Both are session-scoped; the database outlives every test.
Tests in another folder reuse them by importing them into their own conftest.py:
``from tests.web.conftest import site_database, site_manage, site_url  # noqa: F401``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.factories import REFERENCE_BUNDLE, REPO

ARTIFACTS = REPO / "test-artifacts"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SiteDatabase:
    """A temporary SQLite database file and the environment that points manage.py at it."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ki-site-"))
        self.path = self.folder / "site.sqlite3"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.path}",
            "DJANGO_SETTINGS_MODULE": "kernelindex.settings",
            # As in production (scripts/serve): DEBUG off, so 404s are the site's own page.
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SITE_URL": self.url,
            # Plain HTTP on this machine: Secure cookies would never come back.
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "PYTHONUNBUFFERED": "1",
        }
        self.imported = ""

    def manage(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        """Run ``manage.py *args`` against this database; output captured as text."""
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-4000:]}")
        return result


def _import_data(db: SiteDatabase) -> str:
    """Import all shipped data (it includes the reference bundle). When ``import data/`` fails
    (a folder someone is still adding), import each folder of data/ that imports on its own,
    the reference bundle at least, and say what was left out."""
    full = db.manage("import", "data/", check=False)
    if full.returncode == 0:
        return "data/"
    imported, skipped = [], []
    for folder in sorted(p for p in (REPO / "data").iterdir() if p.is_dir()):
        result = db.manage("import", str(folder), check=False)
        if result.returncode == 0:
            imported.append(folder.name)
        else:
            skipped.append(f"{folder.name} ({(result.stderr.strip().splitlines() or ['?'])[-1]})")
    if "reference" not in imported:
        db.manage("import", str(REFERENCE_BUNDLE))
        imported.append(REFERENCE_BUNDLE.name)
    return f"data/{{{','.join(imported)}}}; left out: {'; '.join(skipped)}"


@pytest.fixture(scope="session")
def site_database() -> Iterator[SiteDatabase]:
    db = SiteDatabase()
    db.manage("migrate", "--noinput", "-v", "0")
    db.manage("createcachetable")
    db.imported = _import_data(db)
    # DEBUG off serves hashed static files through whitenoise: collect them (into STATIC_ROOT).
    db.manage("collectstatic", "--noinput", "-v", "0")
    yield db
    shutil.rmtree(db.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def site_manage(site_database: SiteDatabase) -> Callable[..., subprocess.CompletedProcess]:
    """``site_manage("createsuperuser", "--noinput", ...)`` against the served database."""
    return site_database.manage


@pytest.fixture(scope="session")
def site_url(site_database: SiteDatabase) -> Iterator[str]:
    """Base URL (no trailing slash) of gunicorn serving the site on the session database."""
    gunicorn = Path(sys.executable).with_name("gunicorn")
    port = site_database.port
    log = open(site_database.folder / "gunicorn.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(gunicorn), "kernelindex.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2", "--timeout", "60"],
        cwd=REPO,
        env=site_database.env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = site_database.url
    deadline = time.monotonic() + 30
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {(site_database.folder / 'gunicorn.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer within 30 s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
