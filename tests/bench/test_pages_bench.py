"""bench/pages.py runs end to end at a tiny size: builds the index (the shipped data plus a few
synthetic runs) on a throwaway SQLite file, serves it with gunicorn and prints its tables."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.mark.slow
def test_the_page_benchmark_measures_every_mode_against_the_trivial_view(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'pages.sqlite3'}"}
    only = "run page (big group),ranking (group) page,API runs list"
    result = subprocess.run(
        [sys.executable, "bench/pages.py", "--runs", "320", "--board-size", "20", "--requests", "3"]
        + ["--seconds", "0.3", "--connections", "2", "--only", only],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    built = re.search(r"^database: sqlite .*; ([\d,]+) runs$", out, re.M)
    assert built and int(built.group(1).replace(",", "")) >= 320, out
    for mode in ("uncached", "cached", "304"):
        assert f"## {mode}:" in out, out
    assert re.search(r"^\| trivial view \| 200 \| [\d.]+ \| [\d.]+ \| [\d,]+ \| 1\.000 \|", out, re.M), out
    # Pages answer 200 uncached, 304 on their own ETag; so does the API list, on the data version.
    assert re.search(r"^\| run page \(big group\) \| 200 \| [\d.]+ \| [\d.]+ \| [\d,]+ \| [\d.]+ \|", out, re.M)
    assert re.search(r"^\| ranking \(group\) page \| 304 \|", out, re.M), out
    assert re.search(r"^\| API runs list \| 304 \|", out, re.M), out
