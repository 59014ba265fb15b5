"""`manage.py backup` / `restore` bring back every table of a populated site: runs imported from
shipped data, users, an API token, an attestation, a report, moderation events, sign-in records
and sessions. A SQLite site also moves to PostgreSQL through the portable JSON format.

Each site is a real database driven through manage.py in a subprocess, as an operator would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import on_ci

REPO = Path(__file__).resolve().parent.parent.parent
PG = "postgres://postgres@127.0.0.1:5432/"
pytestmark = pytest.mark.slow


class Site:
    def __init__(self, database_url: str) -> None:
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "DJANGO_SETTINGS_MODULE": "kernelindex.settings",
            "DEBUG": "1",
            "REDIS_URL": "",
        }

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=600
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
            )
        return result

    def snapshot(self, kind: str) -> dict[str, list[str]]:
        code = f"from tests.project import site_snapshot; site_snapshot.{kind}()"
        return json.loads(self.manage("shell", "--no-imports", "-c", code).stdout)

    def populate(self) -> None:
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("createcachetable")
        self.manage("import", "data/sol-execbench/leaderboards")
        self.manage("shell", "--no-imports", "-c", "from tests.project import site_snapshot; site_snapshot.populate()")


def postgres_available() -> bool:
    return (
        shutil.which("createdb") is not None
        and subprocess.run(
            ["psql", "-h", "127.0.0.1", "-U", "postgres", "-c", "select 1", "-tA"], capture_output=True
        ).returncode
        == 0
    )


@pytest.fixture
def postgres_database() -> Iterator[callable]:
    """Make empty PostgreSQL databases named ki_backup_<random> (dropped afterwards)."""
    if not postgres_available():
        if on_ci():
            pytest.fail("PostgreSQL at 127.0.0.1:5432 is needed on CI")
        pytest.skip("PostgreSQL at 127.0.0.1:5432 is not running")
    made: list[str] = []

    def make() -> str:
        name = f"ki_backup_{uuid.uuid4().hex[:10]}"
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)
        made.append(name)
        return PG + name

    yield make
    for name in made:
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--force", "--if-exists", name], check=False)


@pytest.fixture(scope="module")
def sqlite_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    site = Site(f"sqlite:///{tmp_path_factory.mktemp('site') / 'site.sqlite3'}")
    site.populate()
    return site


def assert_populated(snapshot: dict[str, list[str]]) -> None:
    for table in (
        "runs_run",
        "auth_user",
        "api_apitoken",
        "attestations_attestation",
        "attestations_issuereport",
        "attestations_moderationevent",
        "axes_accessattempt",
        "axes_accessfailurelog",
        "django_session",
    ):
        assert snapshot[table], f"the populated site has no rows in {table}"


def test_a_sqlite_backup_restores_every_table(sqlite_site: Site, tmp_path: Path) -> None:
    before = sqlite_site.snapshot("tables")
    assert_populated(before)
    sqlite_site.manage("backup", str(tmp_path / "site.backup.sqlite3"))
    empty = Site(f"sqlite:///{tmp_path / 'restored.sqlite3'}")
    empty.manage("restore", str(tmp_path / "site.backup.sqlite3"))
    after = empty.snapshot("tables")
    assert sorted(after) == sorted(before)
    for table in before:
        assert after[table] == before[table], table


def test_a_postgres_backup_restores_every_table(postgres_database, tmp_path: Path) -> None:
    site = Site(postgres_database())
    site.populate()
    before = site.snapshot("tables")
    assert_populated(before)
    site.manage("backup", str(tmp_path / "site.pgdump"))
    empty = Site(postgres_database())
    empty.manage("restore", str(tmp_path / "site.pgdump"))
    after = empty.snapshot("tables")
    assert sorted(after) == sorted(before)
    for table in before:
        assert after[table] == before[table], table
    # The restored site goes on: new rows get new ids (sequences came along).
    empty.manage(
        "shell", "--no-imports", "-c", "from django.contrib.auth.models import User; User.objects.create_user('carol')"
    )


def test_a_sqlite_site_moves_to_postgres(sqlite_site: Site, postgres_database, tmp_path: Path) -> None:
    before = sqlite_site.snapshot("models")
    assert_populated(before)
    sqlite_site.manage("backup", "--format", "json", str(tmp_path / "site.json"))
    target = Site(postgres_database())
    target.manage("restore", "--format", "json", str(tmp_path / "site.json"))
    after = target.snapshot("models")
    assert sorted(after) == sorted(before)
    for table in before:
        assert after[table] == before[table], table
    target.manage(
        "shell", "--no-imports", "-c", "from django.contrib.auth.models import User; User.objects.create_user('carol')"
    )


def test_restore_refuses_a_database_that_is_not_empty(sqlite_site: Site, tmp_path: Path) -> None:
    sqlite_site.manage("backup", str(tmp_path / "b.sqlite3"))
    sqlite_site.manage("backup", "--format", "json", str(tmp_path / "b.json"))
    native = sqlite_site.manage("restore", str(tmp_path / "b.sqlite3"), check=False)
    assert native.returncode != 0 and "restore into a new, empty database" in native.stderr
    portable = sqlite_site.manage("restore", "--format", "json", str(tmp_path / "b.json"), check=False)
    assert portable.returncode != 0 and "restore into a new, empty database" in portable.stderr


def test_backup_never_overwrites(sqlite_site: Site, tmp_path: Path) -> None:
    existing = tmp_path / "existing"
    existing.write_text("keep me")
    result = sqlite_site.manage("backup", str(existing), check=False)
    assert result.returncode != 0 and "never overwrites" in result.stderr
    assert existing.read_text() == "keep me"
