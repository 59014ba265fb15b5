"""Export memory: does streaming a run export hold its whole result in memory?

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ki_bench .venv/bin/python bench/export_memory.py

Streams each export endpoint (the API's CSV, JSONL and canonical bundles, the runs index's CSV)
through the Django test client over the configured database, for the runs of a small and of a
larger source and (the CSVs) for every run, and prints the rows, the bytes, the time and the
peak Python memory (tracemalloc) of each. Constant memory means the peak stays the same
whatever the number of rows; a server that collected its rows would grow with them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelindex.settings")
os.environ.setdefault("PAGE_CACHE_SECONDS", "0")

EXPORTS = [
    "/api/v1/runs/export/csv/",
    "/api/v1/runs/export/jsonl/",
    "/api/v1/runs/export/bundles/",
    "/runs/?format=csv",
]


def stream(client: object, path: str) -> tuple[int, int, float, float]:
    """(lines, bytes, seconds, peak MiB) of one streamed response."""
    tracemalloc.start()
    started = time.perf_counter()
    response = client.get(path, HTTP_HOST="127.0.0.1")  # type: ignore[attr-defined]
    assert response.status_code == 200 and response.streaming, (path, response.status_code)
    lines = size = 0
    for chunk in response.streaming_content:
        lines += chunk.count(b"\n")
        size += len(chunk)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return lines, size, seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sources", default="kernelindex,kernelbench", help="comma-separated sources: one view of each one's runs"
    )
    parser.add_argument(
        "--every-run",
        default="/api/v1/runs/export/csv/,/runs/?format=csv",
        help="comma-separated exports also streamed whole (every run; a million bundles are gigabytes)",
    )
    parser.add_argument("--only", default="", help="comma-separated paths (default: every export)")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    from api import throttling
    from runs.models import Run

    # One client asks for everything: the export throttle would refuse the later requests.
    throttling._Throttle.allow_request = lambda self, request, view: True  # type: ignore[method-assign]
    client = Client()
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}; {Run.objects.count():,} runs")
    print("| export | rows | MiB streamed | s | peak Python MiB |")
    print("|---|---|---|---|---|")
    whole = set(args.every_run.split(",")) if args.every_run else set()
    for path in args.only.split(",") if args.only else EXPORTS:
        joiner = "&" if "?" in path else "?"
        views = [(f"{path} (source={source})", f"{path}{joiner}source={source}") for source in args.sources.split(",")]
        if path in whole:
            views.append((f"{path} (every run)", path))
        for label, url in views:
            lines, size, seconds, peak = stream(client, url)
            print(f"| {label} | {lines:,} | {size / 2**20:,.1f} | {seconds:.1f} | {peak:.1f} |", flush=True)


if __name__ == "__main__":
    main()
