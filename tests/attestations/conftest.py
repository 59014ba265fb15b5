"""Fixtures for the attestation, report and moderation tests.

Personas: ``alice`` is a signed-in user without staff rights, ``mod`` a staff member of the
``moderators`` group (created by the data migration), ``root`` a superuser. ``run`` is the
reference run imported from its shipped bundle; ``group_runs`` is one comparison group of
three runs (synthetic numbers from tests.factories, for ranking effects).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from runs.models import Run
from tests.factories import REFERENCE_BUNDLE, REPO, import_bundles, reference_bundle, sol_group


@pytest.fixture
def run(db) -> Run:
    result = import_bundles([reference_bundle()])
    return Run.objects.get(public_id=result.run_ids[0])


@pytest.fixture
def group_runs(db) -> list[Run]:
    result = sol_group(3)
    return list(Run.objects.filter(public_id__in=result.run_ids).order_by("rank"))


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.org", "alice-password-1")


@pytest.fixture
def mod(db) -> User:
    user = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    user.groups.add(Group.objects.get(name="moderators"))
    return user


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", "root@example.org", "root-password-1")


@pytest.fixture
def anon_client() -> Client:
    return Client(REMOTE_ADDR="203.0.113.7")


@pytest.fixture
def alice_client(alice: User) -> Client:
    client = Client(REMOTE_ADDR="203.0.113.8")
    client.force_login(alice)
    return client


@pytest.fixture
def mod_client(mod: User) -> Client:
    client = Client()
    client.force_login(mod)
    return client


@pytest.fixture
def root_client(root: User) -> Client:
    client = Client()
    client.force_login(root)
    return client


def reproduction_data(**overrides: object) -> dict[str, object]:
    """A complete reproduction as the form posts it (a re-measurement on an H200)."""
    data: dict[str, object] = {
        "kind": "reproduction",
        "measured_value": "19.2",
        "measured_unit": "µs",
        "measured_statistic": "mean",
        "cases_reproduced": "16",
        "cases_matched": "16",
        "gpu_product": "NVIDIA B200",
        "driver_version": "570.124.06",
        "cuda_version": "12.8",
        "torch_version": "2.7.0",
        "command": "python -m sol_execbench.eval --kernel 062 --repeat 100",
        "link": "https://example.org/logs/run-062.txt",
        "text": "Re-ran the submission on our own B200.",
    }
    data.update(overrides)
    return data


def note_data(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {"kind": "note", "text": "The kernel assumes a contiguous KV cache.", "link": ""}
    data.update(overrides)
    return data


def report_data(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "category": "correctness",
        "description": "Outputs differ from the reference on case 3 when run locally.",
        "contact_email": "",
    }
    data.update(overrides)
    return data


def wait_for_minute_room(seconds: float) -> None:
    """Rate limits count per clock minute: start a burst only when it fits in this minute."""
    left = 60 - time.time() % 60
    if left < seconds:
        time.sleep(left + 0.05)


@pytest.fixture
def minute_room() -> None:
    wait_for_minute_room(5)


# -- the site served by gunicorn, for real concurrency and the browser ---------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveSite:
    """gunicorn (4 workers) on a temporary SQLite file: migrated, cache table created, the
    reference bundle imported. ``manage()`` runs manage.py against the same database."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="ki-attest-"))
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.folder / 'site.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "kernelindex.settings",
            "DEBUG": "1",
            "TRUSTED_PROXY_COUNT": "0",
            "RATE_LIMIT_PER_MINUTE": "5",
            "RATE_LIMIT_PER_DAY": "50",
            "PYTHONUNBUFFERED": "1",
        }
        self.url = ""
        self.run_id = ""
        self.process: subprocess.Popen | None = None

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=300
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stderr[-4000:]}")
        return result.stdout

    def shell(self, code: str) -> str:
        return self.manage("shell", "-c", code).strip().splitlines()[-1]

    def start(self) -> None:
        port = _free_port()
        self.log = open(self.folder / "gunicorn.log", "w")  # noqa: SIM115 - closed in stop()
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.process = subprocess.Popen(
            [str(gunicorn), "kernelindex.wsgi", "-b", f"127.0.0.1:{port}", "-w", "4", "--timeout", "60"],
            cwd=REPO,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {(self.folder / 'gunicorn.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gunicorn did not answer within 30 s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _live_postgres(site: LiveSite, suffix: str = "attest_live") -> Callable[[], None] | None:
    """On the PostgreSQL test run, serve from a fresh database of our own next to pytest's
    (``suffix`` keeps two live sites of one session apart)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    import psycopg

    parts = urllib.parse.urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'kernelindex'}_{suffix}"
    admin_url = urllib.parse.urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))

    def execute(sql: str) -> None:
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(sql)

    execute(f'DROP DATABASE IF EXISTS "{name}"')
    execute(f'CREATE DATABASE "{name}"')
    site.env["DATABASE_URL"] = urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    return lambda: execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def live_site() -> Iterator[LiveSite]:
    """The SQLite file by default; on the PostgreSQL run a PostgreSQL database, so the atomic
    counter is tested under both (BEGIN IMMEDIATE and SELECT … FOR UPDATE)."""
    site = LiveSite()
    drop = _live_postgres(site)
    try:
        site.manage("migrate", "--noinput", "-v", "0")
        site.manage("createcachetable")
        site.manage("import", str(REFERENCE_BUNDLE))
        site.run_id = site.shell("from runs.models import Run; print(Run.objects.get().public_id)")
        site.start()
        yield site
    finally:
        site.stop()
        if drop is not None:
            drop()


@pytest.fixture
def fresh_site(live_site: LiveSite) -> LiveSite:
    """The live site with empty rate-limit counters and no attestations or reports."""
    live_site.shell(
        "from django.core.cache import cache; cache.clear(); "
        "from attestations.models import Attestation, IssueReport, ModerationEvent; "
        "ModerationEvent.objects.all().delete(); Attestation.objects.all().delete(); "
        "IssueReport.objects.all().delete(); print('ok')"
    )
    return live_site
