"""Page benchmark: every page and API endpoint against a trivial view, served by gunicorn.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ki_bench .venv/bin/python bench/pages.py --runs 100000

Builds the database first (migrate, the cache tables, the shipped data under data/ through
``ingest.pipeline.import_paths``, then synthetic SOL-ExecBench leaderboards from
``bench/import_bench.py`` until it holds ``--runs`` runs), starts gunicorn as ``scripts/serve``
does (2 sync workers, DEBUG=0), and prints for each page: sequential p50/p95 latency, req/s
under load (``--connections`` clients, each one request at a time, for ``--seconds``), the
ratio of that rate to ``/healthz`` measured in the same run, the query count, and whether any
of the page's query plans (EXPLAIN, PostgreSQL only) scans the runs table sequentially.

The load is wrk's (``apt-get install wrk``) when it is installed, as the issue measured; without
it Python clients stand in, which spend a share of the same cores and read every ratio higher.

Modes (``--modes``): ``uncached`` serves with the full-page cache off (PAGE_CACHE_SECONDS=0),
``cached`` with it on (anonymous GETs from the page cache), ``304`` sends the page's ETag back.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import multiprocessing
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kernelindex.settings")

TRIVIAL = "/healthz"


# -- building the database -----------------------------------------------------------------------


def build(runs: int, board_size: int, seed: int) -> None:
    """Migrate, import data/ once, then synthetic boards until the index holds ``runs`` runs."""
    import random

    from django.core.management import call_command
    from import_bench import board

    from ingest.pipeline import apply_all, import_paths, parse_paths
    from runs.models import Run

    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)
    if not Run.objects.filter(source__slug="sol-execbench").exists():
        started = time.perf_counter()
        import_paths([str(REPO / "data")])
        print(f"imported the shipped data/: {Run.objects.count()} runs in {time.perf_counter() - started:.1f} s")
    missing = runs - Run.objects.count()
    if missing <= 0:
        return
    rng = random.Random(seed)
    users = [f"user {i} | team@{i % 97}" for i in range(max(5000, board_size))]
    tag = f"p{int(time.time())}"  # new benchmarks on every build: kernel numbers may repeat
    started, boards = time.perf_counter(), 0
    with tempfile.TemporaryDirectory(prefix="ki-pages-") as folder:
        chunk, index = [], 1
        while missing > 0:
            rows = min(board_size, max(missing - 1, 1))
            data = board(index, tag, rows, users, rng)
            path = Path(folder, f"board-{index:06d}.json")
            path.write_text(json.dumps(data))
            chunk.append(str(path))
            missing -= rows + 1
            index += 1
            if len(chunk) >= 100 or missing <= 0:
                apply_all(parse_paths(chunk))
                for done in chunk:
                    Path(done).unlink()
                boards += len(chunk)
                chunk = []
                print(f"  {Run.objects.count():,} runs ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"built {Run.objects.count():,} runs ({boards} synthetic boards) in {time.perf_counter() - started:.0f} s")


# -- what to measure -----------------------------------------------------------------------------


def pages() -> list[tuple[str, str]]:
    """(name, path) of every page and endpoint measured, picked from the database."""
    from django.db.models import Count, Sum

    from runs.models import ComparisonGroup, Environment, Run, Source
    from web.tables import gpu_slug

    biggest = ComparisonGroup.objects.annotate(n=Count("runs")).order_by("-n").first()
    ranked = Run.objects.filter(group=biggest, rank__isnull=False).order_by("rank")
    middle = ranked[max(ranked.count() // 2 - 1, 0)]
    other = ranked.last()
    reference = Run.objects.filter(benchmark__native_id__startswith="062_").exclude(rank__isnull=True).first()
    reference = reference or middle
    benchmark = biggest.benchmark
    query = urllib.parse.urlencode({"benchmark": benchmark.native_id, "gpu": biggest.hardware_product})
    # Filters whose runs a newest-first walk meets late or never: the smallest source, the one
    # whose runs are the oldest, and the GPU with the fewest runs (other than the biggest group's).
    sources = Source.objects.filter(published_runs__gt=0)
    small = sources.order_by("published_runs", "slug").first()
    oldest = sources.order_by("last_observed_at", "slug").first()
    gpus = ComparisonGroup.objects.exclude(hardware_product=biggest.hardware_product).values("hardware_product")
    rare = gpus.annotate(n=Sum("published_runs")).filter(n__gt=0).order_by("n", "hardware_product").first()
    rare_gpu = gpu_slug(rare["hardware_product"]) if rare else gpu_slug(biggest.hardware_product)
    # Filters that name several ids (an architecture's environments) or a value few runs have.
    widest = Environment.objects.values("architecture").annotate(n=Count("pk")).order_by("-n", "architecture").first()
    # A group column whose value few runs have: it was a walk of the whole newest-first index.
    harness = (
        ComparisonGroup.objects.values("harness_name")
        .annotate(n=Sum("published_runs"))
        .filter(n__gt=0)
        .order_by("n", "harness_name")
        .first()
    )
    before = (oldest.last_observed_at or datetime.now(UTC)).date().isoformat()
    return [
        ("trivial view", TRIVIAL),
        ("home", "/"),
        ("run page (big group)", f"/runs/{middle.public_id}/"),
        ("run page (kernel 062)", f"/runs/{reference.public_id}/"),
        ("run JSON twin", f"/runs/{middle.public_id}.json"),
        ("compare (big group)", f"/runs/{middle.public_id}/compare/{other.public_id}/"),
        ("ranking (group) page", f"/groups/{biggest.key}/"),
        ("benchmark page", f"/benchmarks/{benchmark.source.slug}/{benchmark.native_id}/"),
        ("search", "/search/?q=kv+cache"),
        ("search (a GPU)", "/search/?q=B200"),
        ("source page", "/sources/sol-execbench/"),
        ("runs index", "/runs/"),
        ("runs index (filtered)", f"/runs/?gpu={gpu_slug(biggest.hardware_product)}&source={benchmark.source.slug}"),
        ("benchmarks index", "/benchmarks/"),
        ("benchmark across GPUs", f"/benchmarks/{benchmark.source.slug}/{benchmark.native_id}/gpus/"),
        ("GPUs index", "/gpus/"),
        ("GPU page", f"/gpus/{gpu_slug(biggest.hardware_product)}/"),
        ("projects index", "/projects/"),
        ("environment page", f"/environments/{middle.environment.digest}/"),
        ("API runs list", "/api/v1/runs/"),
        ("API runs (filtered)", f"/api/v1/runs/?{query}"),
        ("API runs (smallest source)", f"/api/v1/runs/?source={small.slug}"),
        ("API runs (oldest source)", f"/api/v1/runs/?source={oldest.slug}"),
        ("runs index (oldest source)", f"/runs/?source={oldest.slug}"),
        ("runs index (rarest GPU)", f"/runs/?gpu={rare_gpu}"),
        ("runs index (failed runs)", "/runs/?status=failed"),
        ("API runs (an architecture)", f"/api/v1/runs/?architecture={widest['architecture'] if widest else 'sm_90'}"),
        ("API runs (oldest benchmark source)", f"/api/v1/runs/?benchmarkSource={oldest.slug}"),
        ("API runs (reruns)", "/api/v1/runs/?evidenceLevel=kernelindex_rerun"),
        ("API runs (unranked)", "/api/v1/runs/?ranked=false"),
        ("API runs (observed before)", f"/api/v1/runs/?observedBefore={before}"),
        ("API runs (rarest harness)", "/api/v1/runs/?" + urllib.parse.urlencode({"harness": harness["harness_name"]})),
        ("API run detail", f"/api/v1/runs/{middle.public_id}/"),
        ("API groups list", "/api/v1/groups/"),
    ]


def queries_and_plans(path: str) -> tuple[int, str]:
    """The page's query count in this process (page cache off), and on PostgreSQL whether any of
    its plans scans runs_run sequentially ("yes (n)" / "no"; "-" on SQLite)."""
    from django.conf import settings
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, override_settings

    # The page's own queries: the page cache in memory here, so its reads are not counted.
    pages_cache = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "bench"}
    with (
        override_settings(PAGE_CACHE_SECONDS=0, CACHES={**settings.CACHES, "pages": pages_cache}),
        CaptureQueriesContext(connection) as captured,
    ):
        response = Client().get(path)
    if response.status_code >= 400:
        return -response.status_code, "-"
    count = len(captured.captured_queries)
    if connection.vendor != "postgresql":
        return count, "-"
    scans = 0
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            sql = query["sql"]
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
            plan = json.dumps(cursor.fetchone()[0])
            if '"Node Type": "Seq Scan"' in plan and _seq_scan_on_runs(json.loads(plan)):
                scans += 1
    return count, f"yes ({scans})" if scans else "no"


def _seq_scan_on_runs(plan: object) -> bool:
    if isinstance(plan, dict):
        if plan.get("Node Type") == "Seq Scan" and plan.get("Relation Name") == "runs_run":
            return True
        return any(_seq_scan_on_runs(value) for value in plan.values())
    if isinstance(plan, list):
        return any(_seq_scan_on_runs(value) for value in plan)
    return False


# -- the server and the load ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(port: int, page_cache: bool, workers: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PORT": str(port),
        "WEB_CONCURRENCY": str(workers),
        "PAGE_CACHE_SECONDS": "3600" if page_cache else "0",
        "API_THROTTLE_ANON": "100000000/min",
    }
    log = open(Path(tempfile.gettempdir(), f"ki-pages-gunicorn-{port}.log"), "w")  # noqa: SIM115
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("gunicorn")), "--config", "gunicorn.conf.py", "kernelindex.wsgi"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if get(port, TRIVIAL)[0] == 200:
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"gunicorn did not start: see {log.name}")


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _load_worker(port: int, path: str, headers: dict[str, str], until: float, done: multiprocessing.Value) -> None:
    count = 0
    while time.monotonic() < until:
        get(port, path, headers)
        count += 1
    with done.get_lock():
        done.value += count


def server_cpu(server: subprocess.Popen) -> float:
    """CPU seconds used so far by the gunicorn workers (children of the master)."""
    total = 0
    for child in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split():
        fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


WRK = shutil.which("wrk")


def load_seconds(seconds: float) -> float:
    """How long each load runs: wrk counts whole seconds, so ``--seconds`` rounded up (at least 1)."""
    return max(1, math.ceil(seconds)) if WRK else seconds


def load(
    server: subprocess.Popen, port: int, path: str, headers: dict[str, str], connections: int, seconds: float
) -> tuple[float, float]:
    """Requests per second with ``connections`` clients, each sending one request at a time, and
    the workers' CPU milliseconds per request (less sensitive to a busy machine than the rate).

    The clients are wrk's when it is installed (Debian's package), as the issue measured: Python
    clients spent a share of the same two cores on every request, about what gunicorn spent on
    the trivial view, so the trivial view's rate fell most and every ratio read 5–35% higher
    than wrk's (the run page 0.222× against 0.211×, the benchmark page 0.198× against 0.147×)."""
    if WRK:
        return _wrk(server, port, path, headers, connections, seconds)
    done = multiprocessing.Value("l", 0)
    cpu = server_cpu(server)
    start = time.monotonic()
    until = start + seconds
    workers = [
        multiprocessing.Process(target=_load_worker, args=(port, path, headers, until, done))
        for _ in range(connections)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - start
    return done.value / elapsed, (server_cpu(server) - cpu) * 1000 / max(done.value, 1)


def _wrk(
    server: subprocess.Popen, port: int, path: str, headers: dict[str, str], connections: int, seconds: float
) -> tuple[float, float]:
    """``load`` by wrk: two threads (one a connection if fewer), ``connections`` connections, for
    ``load_seconds(seconds)``; every answer must be a 2xx or 3xx."""
    command = [WRK, f"-t{min(2, connections)}", f"-c{connections}", f"-d{load_seconds(seconds)}s"]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    cpu = server_cpu(server)
    output = subprocess.run([*command, f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True)
    cpu = server_cpu(server) - cpu
    text = output.stdout
    if "Non-2xx or 3xx responses" in text or "Socket errors" in text:
        raise RuntimeError(f"wrk saw failed requests for {path}:\n{text}")
    done = int(re.search(r"(\d+) requests in", text).group(1))
    return float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)), cpu * 1000 / max(done, 1)


def warm(port: int, path: str, headers: dict[str, str], workers: int) -> None:
    """A few requests at once, all answered before the timing starts, so each worker has served the
    page (its database connection open, its statements prepared). Without this the p95 of the first
    page of a run (of 20 requests: the slowest) was 85-130 ms from one cold worker, 25 ms warm; timed
    after the load instead, the requests still queued from the load were in it (440 ms at 1M runs)."""
    threads = [threading.Thread(target=get, args=(port, path, headers)) for _ in range(2 * workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def sequential(port: int, path: str, headers: dict[str, str], count: int) -> tuple[float, float]:
    """p50 and p95 latency in ms of ``count`` requests one after another."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        get(port, path, headers)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def measure(mode: str, targets: list[tuple[str, str]], args: argparse.Namespace, counts: dict) -> None:
    port = free_port()
    server = serve(port, page_cache=mode != "uncached", workers=args.workers)
    try:
        trivial_rate, trivial_cpu = load(server, port, TRIVIAL, {}, args.connections, args.seconds)
        p50, p95 = sequential(port, TRIVIAL, {}, args.requests)
        rows: list[tuple] = [("trivial view", 200, p50, p95, trivial_rate, 1.0, trivial_cpu, 1.0)]
        for name, path in targets:
            if path == TRIVIAL:
                continue
            headers: dict[str, str] = {}
            status, response_headers, _ = get(port, path)  # warms the page cache in "cached" mode
            if mode == "304" and path != TRIVIAL:
                etag = response_headers.get("ETag")
                if not etag:
                    rows.append((name, f"{status} (no ETag)", None, None, None, None, None, None))
                    continue
                headers = {"If-None-Match": etag}
                status = get(port, path, headers)[0]
            warm(port, path, headers, args.workers)
            p50, p95 = sequential(port, path, headers, args.requests)
            rate, cpu = load(server, port, path, headers, args.connections, args.seconds)
            # The trivial view again after every page: the ratio is to the mean of the two
            # measurements around it, so a machine that gets busier or quieter skews it less.
            rate_after, cpu_after = load(server, port, TRIVIAL, {}, args.connections, args.seconds)
            reference, reference_cpu = (trivial_rate + rate_after) / 2, (trivial_cpu + cpu_after) / 2
            trivial_rate, trivial_cpu = rate_after, cpu_after
            rows.append((name, status, p50, p95, rate, rate / reference, cpu, reference_cpu / cpu if cpu else None))
        clients = "wrk" if WRK else "Python clients (wrk is not installed)"
        print(
            f"\n## {mode}: {args.workers} gunicorn workers, {args.connections} connections ({clients}), "
            f"{load_seconds(args.seconds):g} s each"
        )
        print(
            "| page | status | p50 ms | p95 ms | req/s | × trivial (req/s) | CPU ms/req | × trivial (CPU) "
            "| queries | seq scan of runs_run |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, status, p50, p95, rate, ratio, cpu, cpu_ratio in rows:
            queries, scan = counts[name]
            if p50 is None:
                print(f"| {name} | {status} | | | | | | | {queries} | {scan} |")
                continue
            cpu_text = f"{cpu_ratio:.3f}" if cpu_ratio else "-"
            print(
                f"| {name} | {status} | {p50:.1f} | {p95:.1f} | {rate:,.0f} | {ratio:.3f} | {cpu:.2f} | {cpu_text} "
                f"| {queries} | {scan} |",
                flush=True,
            )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=0, help="build until the index holds this many runs")
    parser.add_argument("--board-size", type=int, default=1000, help="ranked rows per synthetic leaderboard")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=30, help="sequential requests per page")
    parser.add_argument("--seconds", type=float, default=3.0, help="load time per page")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--modes", default="uncached,cached,304", help="comma-separated: uncached, cached, 304")
    parser.add_argument("--only", default="", help="comma-separated page names to measure (default: all)")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    from runs.models import Run

    build(args.runs, args.board_size, args.seed)
    # gunicorn serves with DEBUG=0: hashed static files, collected as scripts/serve does.
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=REPO,
        env={**os.environ, "DEBUG": "0", "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-collectstatic"},
        check=True,
    )
    targets = pages()
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        targets = [(name, path) for name, path in targets if name in wanted or path == TRIVIAL]
    print(f"database: {connection.vendor} {connection.settings_dict['NAME']}; {Run.objects.count():,} runs")
    print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    counts = {name: queries_and_plans(path) for name, path in targets}
    connection.close()
    for name, path in targets:
        print(f"  {name}: {path}")
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        measure(mode, targets, args, counts)


if __name__ == "__main__":
    main()
