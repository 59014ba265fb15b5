"""Instructions per request, page by page: a repeatable measure of CPU cost, whatever the load.

    .venv/bin/python bench/instructions.py [--requests 20] [--only "ranking (group) page,API runs list"]

Wall-clock ratios (``bench/pages.py``) move with whatever else the machine is doing (by ±10% on
a quiet machine; on a shared VM a page's CPU per request moved by half between runs of the same
code); callgrind's instruction counts are the same run after run. This builds the database as
``bench/pages.py`` does, then runs one Python process under ``valgrind --tool=callgrind`` that
serves each page through Django's test client: five warm-up requests, then ``--requests``
requests inside ``sys.call_tracing``. Callgrind collects only inside that call
(``--toggle-collect``) and writes one dump per page (``--dump-after``), so start-up, imports and
warm-up are not counted. Served as gunicorn serves in the bench: DEBUG=0, page cache off.
Prints millions of instructions per request and that as a multiple of the trivial view's: a
ratio of costs, where bench/pages.py's is a ratio of rates that also holds what gunicorn and the
HTTP round trip cost every request alike, so a page at 0.25 there is at well over 4 here.
``--keep DIR`` keeps the dumps, one a page in the order served, for ``callgrind_annotate``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelindex.settings")

SERVED_AS = {
    "DEBUG": "0",
    "PAGE_CACHE_SECONDS": "0",
    "API_THROTTLE_ANON": "100000000/min",
    "ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
}
WARM_UP = 5


def serve_counted(targets: list[list[str]], requests: int) -> None:
    """Inside valgrind: each page's requests run within one ``sys.call_tracing`` call."""
    import django

    django.setup()
    from django.test import Client

    client = Client()

    def many(path: str) -> None:
        for _ in range(requests):
            client.get(path)

    for _name, path in targets:
        for _ in range(WARM_UP):
            response = client.get(path)
            if response.status_code != 200:
                raise SystemExit(f"{path} answered {response.status_code}")
        sys.call_tracing(many, (path,))


def totals(folder: Path) -> list[int]:
    """Instructions in each dump, in the order the pages were served."""
    dumps = sorted(folder.glob("cg.out.*"), key=lambda p: int(p.suffix[1:]))
    counts = []
    for dump in dumps:
        match = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(errors="replace"), re.M)
        counts.append(int(match.group(1)) if match else 0)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=0, help="build until the index holds this many runs")
    parser.add_argument("--requests", type=int, default=20, help="counted requests per page")
    parser.add_argument("--only", default="", help="comma-separated page names (default: all)")
    parser.add_argument("--keep", help="keep callgrind's dumps in this folder (for callgrind_annotate --inclusive=yes)")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.update({key: os.environ.get(key, value) for key, value in SERVED_AS.items()})
    os.environ.setdefault("SECRET_KEY", "bench-instructions")
    if args.inner:
        serve_counted(json.loads(Path(args.inner).read_text()), args.requests)
        return
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")

    import django

    django.setup()
    from django.db import connection
    from pages import TRIVIAL, build, pages

    build(args.runs, 1000, 1)
    targets = pages()
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        targets = [(name, path) for name, path in targets if name in wanted or path == TRIVIAL]
    connection.close()
    # DEBUG=0 serves hashed static files: collected as scripts/serve does.
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=REPO, check=True)
    with tempfile.TemporaryDirectory(prefix="ki-instructions-") as tmp:
        folder = Path(tmp)
        (folder / "targets.json").write_text(json.dumps(targets))
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=sys_call_tracing",
                "--dump-after=sys_call_tracing",
                f"--callgrind-out-file={folder / 'cg.out'}",
                sys.executable,
                __file__,
                "--requests",
                str(args.requests),
                "--inner",
                str(folder / "targets.json"),
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise SystemExit(f"the counted process failed:\n{done.stderr[-3000:]}")
        counts = totals(folder)
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    if len(counts) != len(targets):
        raise SystemExit(f"expected {len(targets)} callgrind dumps, found {len(counts)}")
    trivial = counts[0] / args.requests
    print(f"database: {connection.vendor}; {args.requests} requests per page after {WARM_UP} warm-up requests")
    print(f"{'page':<28} {'M instr/req':>12} {'cost × trivial':>15}")
    for (name, _path), count in zip(targets, counts, strict=True):
        per = count / args.requests
        print(f"{name:<28} {per / 1e6:>12.2f} {per / trivial:>15.2f}")


if __name__ == "__main__":
    main()
