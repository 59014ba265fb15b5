"""Import benchmark: N synthetic runs in the SOL-ExecBench leaderboard format, imported through
the real importer (``manage.py import``'s parse → apply path) on the configured database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ki_h2bench .venv/bin/python bench/import_bench.py --runs 100000

The numbers are synthetic (this measures throughput, not data): boards of ``--board-size``
rows, each a valid leaderboard response (a Scoring Baseline row, latency_ms × avg_speedup equal
to its latency within the rounding of avg_speedup, ranks by sol_score). Kernel names carry a
per-run tag, so every run of the benchmark creates new runs; ``--reimport`` also times
importing the same files again (every run unchanged).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

GOAL = 5000.0  # runs/s

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelindex.settings")


def board(kernel_index: int, tag: str, rows: int, users: list[str], rng: random.Random) -> dict:
    baseline = round(rng.uniform(0.01, 2.0), 6)
    entries = []
    # Distinct scores so the published ranks are unambiguous.
    scores = [score / 1_000_000 for score in rng.sample(range(50_000, 990_000), rows)]
    for index, username in enumerate(rng.sample(users, rows)):
        latency = round(baseline * rng.uniform(0.3, 3.0), 6)
        entries.append(
            {
                "submission_id": kernel_index * 100000 + index,
                "user_id": users.index(username),
                "username": username,
                "sol_score": scores[index],
                "latency_ms": latency,
                "fast_1_count": rng.randint(0, 16),
                "fast_1_total": 16,
                "avg_speedup": round(baseline / latency, 4),
                "submitted_at": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
                f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}",
            }
        )
    entries.sort(key=lambda e: (-e["sol_score"], e["submission_id"]))
    previous = None
    for rank, entry in enumerate(entries, start=1):
        entry["rank"] = rank
        entry["sol_score_diff"] = None if previous is None else round(entry["sol_score"] - previous, 6)
        previous = entry["sol_score"]
    reference = [
        {
            "username": "Scoring Baseline",
            "sol_score": 0.5,
            "latency_ms": baseline,
            "fast_1_count": 0,
            "fast_1_total": 16,
            "avg_speedup": 1.0,
            "rank": None,
            "is_reference": True,
        },
    ]
    name = f"{kernel_index:03d}_bench_{tag}_kernel_{kernel_index}"
    return {
        "url": f"https://example.invalid/api/leaderboard/kernel/{kernel_index}/B200?evaluation_stack_version=v1.1",
        "retrieved_at": "2026-09-06T18:40:17.028903+00:00",
        "response": {
            "data": {
                "kernel_name": name,
                "kernel_title": name,
                "kernel_id": kernel_index,
                "gpu_type": "B200",
                "evaluation_stack_version": "v1.1",
                "latency_unit": "ms",
                "reference_entries": reference,
                "rankings": reference + entries,
            }
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000, help="ranked rows to generate (default 100,000)")
    parser.add_argument("--board-size", type=int, default=200, help="ranked rows per leaderboard file")
    parser.add_argument("--users", type=int, default=5000, help="distinct submitters")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reimport", action="store_true", help="also time a second import of the same files")
    parser.add_argument("--sql-profile", action="store_true", help="print the time spent per kind of SQL statement")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import F

    from ingest.pipeline import apply_all, parse_paths
    from runs.models import Run

    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)  # the page cache's data version, bumped by imports
    rng = random.Random(args.seed)
    tag = f"{int(time.time())}"
    users = [f"user {i} | team@{i % 97}" for i in range(max(args.users, args.board_size))]
    boards = (args.runs + args.board_size - 1) // args.board_size
    with tempfile.TemporaryDirectory(prefix="ki-bench-") as folder:
        remaining = args.runs
        for index in range(boards):
            rows = min(args.board_size, remaining)
            remaining -= rows
            data = board(index + 1, tag, rows, users, rng)
            Path(folder, f"board-{index + 1:05d}.json").write_text(json.dumps(data))
        total_rows = args.runs + boards  # ranked rows plus one Scoring Baseline row per board
        before = Run.objects.count()
        print(f"database: {connection.vendor} {connection.settings_dict['NAME']}; {before} runs before")
        print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"generated {boards} leaderboard files, {args.runs} ranked rows + {boards} reference rows")

        stats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])

        def profile(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                entry = stats[" ".join(sql.split()[:3])[:60]]
                entry[0] += 1
                entry[1] += time.perf_counter() - started

        if args.sql_profile:
            connection.execute_wrappers.append(profile)
        for attempt in ["import"] + (["re-import"] if args.reimport else []):
            start, cpu = time.perf_counter(), time.process_time()
            parsed = parse_paths([folder])
            parsed_at = time.perf_counter()
            apply_all(parsed)
            end, cpu = time.perf_counter(), time.process_time() - cpu
            rate = total_rows / (end - start)
            print(
                f"{attempt}: {total_rows} runs in {end - start:.2f} s "
                f"(parse + validate {parsed_at - start:.2f} s, write {end - parsed_at:.2f} s; "
                f"this process used {cpu:.2f} s of CPU): "
                f"{rate:,.0f} runs/s = {rate / GOAL:.2f}× the {GOAL:,.0f} runs/s goal"
            )
        print(f"{Run.objects.count() - before} runs added")
        ranked = Run.objects.filter(benchmark__native_id__contains=f"_bench_{tag}_", is_reference=False)
        agree = ranked.filter(rank=F("source_rank")).count()
        print(f"computed ranks equal to the published ranks: {agree} of {ranked.count()}")
        for statement, (count, seconds) in sorted(stats.items(), key=lambda item: -item[1][1])[:12]:
            print(f"  {seconds:7.2f} s  {count:6.0f}×  {statement}")


if __name__ == "__main__":
    main()
