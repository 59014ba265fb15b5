"""A pull worker of the rerun queue: ``python -m reruns.worker --api URL --token T [--once] [--name NAME]``.

Runs on a GPU host that can reach the index over HTTPS (and nothing need reach it, as with CI
runners). Loop: claim the oldest request (``POST /api/v1/reruns/claim/``), run the rerun harness
on the definition and solution the claim carries, post the bundle with the rerun token
(``POST /api/v1/manifests/``), finish the request (``POST /api/v1/reruns/<id>/finish/``):
``done`` with the recorded run, or ``failed`` with the reason.

What ran is reported as it ran, never as a timing it did not make: a failing or crashing
implementation is a failed run with the harness's status; on a host without a CUDA device the
harness still does everything up to where CUDA is needed (definition, workload, solution, trial
processes), its failed run is recorded, and the request fails with the reason "no CUDA device".
Plain Python: the standard library and the harness (``reruns.harness``), no Django.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .harness.manifest import verify_bundle
from .harness.runner import run_rerun

CUDA_PROBE = (
    "import json\n"
    "try:\n"
    "    import torch\n"
    "except Exception as exc:\n"
    "    print(json.dumps({'problem': 'torch cannot be imported: ' + repr(exc)})); raise SystemExit\n"
    "if not torch.cuda.is_available() or torch.cuda.device_count() < 1:\n"
    "    seen = 'torch ' + torch.__version__ + ' sees none (torch.cuda.is_available() is False)'\n"
    "    print(json.dumps({'problem': seen}))\n"
    "else:\n"
    "    print(json.dumps({'problem': None, 'device': torch.cuda.get_device_name(0)}))\n"
)


def log(message: str) -> None:
    print(f"[worker {datetime.now(UTC).strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class ApiFailure(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Api:
    """The three calls a worker makes, as JSON over HTTP(S) with the rerun token."""

    def __init__(self, base: str, token: str, timeout: float = 120.0) -> None:
        self.base = base.rstrip("/")
        self.token = token
        self.timeout = timeout

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8"),
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                message = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode("utf-8", "replace")[:500]
            raise ApiFailure(error.code, message) from None

    def claim(self, worker: str) -> dict[str, Any] | None:
        status, body = self.post("/api/v1/reruns/claim/", {"worker": worker})
        return None if status == 204 else body

    def submit(self, bundle: dict[str, Any]) -> dict[str, Any]:
        return self.post("/api/v1/manifests/", bundle)[1]

    def finish(self, request_id: int, state: str, *, run: str | None = None, reason: str = "") -> dict[str, Any]:
        body: dict[str, Any] = {"state": state}
        if run is not None:
            body["run"] = run
        if reason:
            body["reason"] = reason
        return self.post(f"/api/v1/reruns/{request_id}/finish/", body)[1]


def cuda_problem(python: str = sys.executable) -> str | None:
    """None when a trial process would find a CUDA device; else why not, in words."""
    try:
        result = subprocess.run([python, "-c", CUDA_PROBE], capture_output=True, text=True, timeout=300)
        return json.loads(result.stdout.strip().splitlines()[-1])["problem"]
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, KeyError) as exc:
        return f"the CUDA probe failed: {exc!r}"


def materialise(work: dict[str, Any], folder: Path) -> tuple[Path, str]:
    """Write the claim's definition and solution under ``folder``; returns the definition
    folder and the harness's ``--solution``."""
    definition = folder / work["definition"]["folder"]
    definition.mkdir(parents=True)
    for name in ("definition.json", "workload.jsonl"):
        (definition / name).write_text(work["definition"]["files"][name], encoding="utf-8")
    solution = work["solution"]
    if solution["kind"] == "builtin":
        return definition, str(solution["spec"])
    if solution["kind"] == "baseline":
        kernel = folder / "kernel.json"
        kernel.write_text(json.dumps(solution["kernel"]), encoding="utf-8")
        return definition, f"baseline:{kernel}"
    if solution["kind"] == "file":
        path = folder / "solution.json"
        path.write_text(json.dumps(solution["file"]), encoding="utf-8")
        return definition, str(path)
    raise ValueError(f"unknown solution kind {solution['kind']!r}")


def process(api: Api, work: dict[str, Any], *, keep: Path | None, python: str = sys.executable) -> str:
    """Run one claimed request to its end; returns the state it was finished with."""
    request_id = work["id"]
    what = f"#{request_id} {work['benchmark']['nativeId']} · {work['expectedRevision']}"
    settings = work["settings"]
    no_cuda = cuda_problem(python)
    if no_cuda:
        log(f"{what}: no CUDA device ({no_cuda}); running the harness up to where it needs one")
    with tempfile.TemporaryDirectory(prefix=f"kernelindex-rerun-{request_id}-") as scratch:
        try:
            definition, solution = materialise(work, Path(scratch))
            log(f"{what}: harness, {settings['trials']} trial(s) × {settings['iterations']} iterations")
            bundle = run_rerun(
                str(definition),
                solution,
                trials=int(settings["trials"]),
                iterations=int(settings["iterations"]),
                warmup_seconds=float(settings["warmupSeconds"]),
                workdir=str(Path(scratch) / "work"),
            )
            problems = verify_bundle(bundle)
            if problems:
                raise ValueError("the harness wrote a bundle whose digests do not verify: " + "; ".join(problems))
        except Exception as exc:  # the harness itself broke: no run to record, say why
            reason = f"harness error: {type(exc).__name__}: {exc}"[:4000]
            log(f"{what}: {reason}")
            api.finish(request_id, "failed", reason=reason)
            return "failed"
    spec = bundle["run"]["spec"]
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        name = f"queue-{request_id}-{work['benchmark']['nativeId'][:3]}-{work['expectedRevision']}.json"
        (keep / name).write_text(json.dumps(bundle, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        run_id = api.submit(bundle)["run"]["id"]
    except ApiFailure as failure:
        reason = f"the index refused the bundle: {failure}"[:4000]
        log(f"{what}: {reason}")
        api.finish(request_id, "failed", reason=reason)
        return "failed"
    status = spec["status"] + (f" ({spec['statusDetail']})" if spec.get("statusDetail") else "")
    if no_cuda:
        reason = f"no CUDA device: {no_cuda}; the harness recorded run {run_id} as {status}"
        api.finish(request_id, "failed", run=run_id, reason=reason)
        log(f"{what}: failed, {reason}")
        return "failed"
    # The rerun was made: a failing implementation is a result too (the run's status says so).
    api.finish(request_id, "done", run=run_id)
    log(f"{what}: done, run {run_id} {status}")
    return "done"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reruns.worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", required=True, help="the index's base URL, e.g. https://kernelindex.example.org")
    parser.add_argument("--token", required=True, help="a rerun token (kit_…)")
    parser.add_argument("--name", default=socket.gethostname(), help="this worker's name in the queue")
    parser.add_argument("--once", action="store_true", help="run at most one request, then exit")
    parser.add_argument("--exit-when-empty", action="store_true", help="exit when nothing is queued")
    parser.add_argument("--poll", type=float, default=30.0, help="seconds between claims while the queue is empty")
    parser.add_argument("--keep", default=None, help="also write each bundle into this folder")
    args = parser.parse_args(argv)
    api = Api(args.api, args.token)
    keep = Path(args.keep) if args.keep else None
    failures = 0
    while True:
        try:
            work = api.claim(args.name)
        except (ApiFailure, OSError) as error:
            log(f"claim failed: {error}")
            if args.once or (isinstance(error, ApiFailure) and error.status in (401, 403)):
                return 2
            time.sleep(args.poll)
            continue
        if work is None:
            if args.once or args.exit_when_empty:
                log("nothing queued")
                return 0 if not failures else 1
            time.sleep(args.poll)
            continue
        log(f"claimed #{work['id']} (attempt {work['attempt']}, lease until {work['leaseExpiresAt']})")
        try:
            state = process(api, work, keep=keep)
        except (ApiFailure, OSError) as error:
            log(f"#{work['id']}: could not report to the index: {error}")
            state = "failed"
        failures += state != "done"
        if args.once:
            return 0 if state == "done" else 1


if __name__ == "__main__":
    sys.exit(main())
