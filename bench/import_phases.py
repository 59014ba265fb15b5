"""Where an import's time goes: ``bench/import_bench.py`` with each phase timed, as wall time,
this process's CPU and the PostgreSQL server's CPU.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ki_phases .venv/bin/python bench/import_phases.py --runs 100000

Takes import_bench's arguments. The server's CPU is read from /proc for the backend serving this
connection, so it is shown only when PostgreSQL runs on this machine. Only phases that run a few
times an import are wrapped: a wrapper around a per-run function (``run_fields``) costs more
than the function (two /proc reads a call) and inflates what it measures. Phases nest
(``batch`` holds ``documents``); a phase's figures include what it calls.

On PostgreSQL each batch's new runs are written on a thread while the next batch is built
(``ingest.engine``), so the server's CPU of that COPY shows in whichever phase it overlapped
(mostly the batches), and the wall time is less than the two CPU columns added up.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import import_bench  # noqa: E402 - after the path that finds it


def main() -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.backends.base import base

    from ingest import engine, pipeline, session

    # Migrated before the wrappers, so the commits counted are the import's, not the migrations'.
    call_command("migrate", verbosity=0)
    ticks = os.sysconf("SC_CLK_TCK")
    backend: dict[str, int] = {}

    def server_cpu() -> float:
        if connection.vendor != "postgresql" or connection.connection is None:
            return 0.0
        if "pid" not in backend:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backend["pid"] = cursor.fetchone()[0]
        try:
            fields = Path(f"/proc/{backend['pid']}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the server is on another machine
            return 0.0
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    totals: dict[str, list[float]] = {}

    def timed(owner: Any, name: str, label: str) -> None:
        function = getattr(owner, name)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            wall, cpu, server = time.perf_counter(), time.process_time(), server_cpu()
            try:
                return function(*args, **kwargs)
            finally:
                row = totals[label]
                row[0] += 1
                row[1] += time.perf_counter() - wall
                row[2] += time.process_time() - cpu
                row[3] += server_cpu() - server

        setattr(owner, name, wrapper)
        totals[label] = [0, 0.0, 0.0, 0.0]  # printed in this order

    for owner, name, label in [
        # import_bench.main imports these two from the pipeline when it runs: it gets the wrappers.
        (pipeline, "parse_paths", "parse and validate"),
        (pipeline, "apply_all", "write (all of it)"),
        (pipeline, "one_per_identity", "  drop repeated runs"),
        (engine, "_import_batch", "  batches of 2,000 runs"),
        (session.ImportSession, "prefetch", "    benchmarks and groups"),
        (session.ImportSession, "documents", "    documents"),
        (engine, "_prepare_pending", "  new runs: keys and ranks"),
        (engine.ranking, "recompute_groups", "  ranks of groups with runs before"),
        (engine.counts, "refresh", "  stored counts"),
        (pipeline, "analyze", "  ANALYZE"),
        (base.BaseDatabaseWrapper, "commit", "  commit (deferred constraint checks)"),
    ]:
        timed(owner, name, label)
    import_bench.main()
    print(f"\n{'phase':<40} {'calls':>6} {'wall s':>8} {'our CPU s':>10} {'server CPU s':>13}")
    for label, (calls, wall, cpu, server) in totals.items():
        print(f"{label:<40} {calls:>6.0f} {wall:>8.2f} {cpu:>10.2f} {server:>13.2f}")


if __name__ == "__main__":
    main()
