"""bench/import_bench.py runs end to end (on a throwaway SQLite file) and imports what it generates."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.ingest.conftest import REPO


def bench(script: str, folder: Path, *args: str) -> str:
    """What ``bench/<script>`` prints importing 60 ranked rows in boards of 20 into a new SQLite file."""
    result = subprocess.run(
        [sys.executable, f"bench/{script}", "--runs", "60", "--board-size", "20", *args],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_import_benchmark_imports_every_generated_row(tmp_path: Path) -> None:
    result = bench("import_bench.py", tmp_path, "--reimport")
    # 60 ranked rows + one Scoring Baseline row per board of 20.
    assert "63 runs added" in result
    assert "computed ranks equal to the published ranks: 60 of 60" in result
    assert re.search(r"^import: 63 runs in .* runs/s = .*× the 5,000 runs/s goal$", result, re.M)
    assert re.search(r"^re-import: 63 runs in ", result, re.M)


def test_the_import_phases_add_up_to_the_import(tmp_path: Path) -> None:
    """bench/import_phases.py: the same import, each phase once here (one batch), with its times."""
    result = bench("import_phases.py", tmp_path)
    assert "63 runs added" in result
    times = {}
    for label in ("parse and validate", "write (all of it)", "batches of 2,000 runs", "new runs: keys and ranks"):
        match = re.search(rf"^\s*{re.escape(label)}\s+1\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", result, re.M)
        assert match, (label, result)
        times[label] = float(match.group(1))
    # The batches and the final write are parts of the write; nothing on SQLite is a server's CPU.
    assert times["batches of 2,000 runs"] + times["new runs: keys and ranks"] <= times["write (all of it)"]
    assert re.search(r"^\s*write \(all of it\)\s+1\s+[\d.]+\s+[\d.]+\s+0\.00$", result, re.M)
