"""bench/import_bench.py runs end to end (on a throwaway SQLite file) and imports what it generates."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.ingest.conftest import REPO


def test_the_import_benchmark_imports_every_generated_row(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'bench.sqlite3'}"}
    result = subprocess.run(
        [sys.executable, "bench/import_bench.py", "--runs", "60", "--board-size", "20", "--reimport"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    # 60 ranked rows + one Scoring Baseline row per board of 20.
    assert "63 runs added" in result.stdout
    assert "computed ranks equal to the published ranks: 60 of 60" in result.stdout
    assert re.search(r"^import: 63 runs in .* runs/s = .*× the 5,000 runs/s goal$", result.stdout, re.M)
    assert re.search(r"^re-import: 63 runs in ", result.stdout, re.M)
