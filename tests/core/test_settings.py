"""Settings refuse to run in production without a secret key."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.core.conftest import REPO


def run_check(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY"}}
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env={**clean, **env}, capture_output=True, text=True
    )


def test_it_fails_with_debug_off_and_no_secret_key() -> None:
    result = run_check(DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_it_starts_with_debug_off_and_a_secret_key() -> None:
    result = run_check(DEBUG="0", SECRET_KEY="x" * 50, ALLOWED_HOSTS="kernelindex.example")
    assert result.returncode == 0, result.stderr
