"""Parent side: trials in separate processes, per-case watchdog, aggregation (no torch)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex.canonical import sha256_hex

from . import status as st
from .definition import load_definition, load_workload
from .implementation import ImplementationError, resolve_implementation
from .manifest import DEFAULT_SETTINGS, build_bundle

BUILTIN_SPECS = ("reference", "torch-compile", "torch-compile-eager-numerics")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding reruns/


def _log(msg: str) -> None:
    print(f"[rerun {datetime.now(UTC).strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _kill(proc: subprocess.Popen) -> None:
    """Kill the worker we started and its process group (it runs in its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _reader(stream, q: queue.Queue) -> None:
    for line in stream:
        q.put(line)
    q.put(None)


def _stderr_tail(path: Path, limit: int = 1500) -> str:
    try:
        data = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return data if len(data) <= limit else "..." + data[-limit:]


def run_trial(
    base_cfg: dict,
    trial: int,
    case_indices: list[int],
    workdir: Path,
    case_timeout: float,
    startup_timeout: float,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Run one trial: a worker process over all cases, restarted after a timeout/crash."""
    pending = list(case_indices)
    results: dict[int, dict] = {}
    no_graph: set[int] = set()
    retried: set[int] = set()
    info: dict[str, Any] = {"processes": 0, "clocks": {}}
    environment = None
    started = time.monotonic()
    attempts = 0
    while pending:
        attempts += 1
        if attempts > 2 * len(case_indices) + 5:
            for idx in pending:
                results[idx] = {
                    "index": idx,
                    "status": st.RUNTIME_ERROR,
                    "detail": "harness gave up restarting the trial process",
                }
            break
        cfg = {**base_cfg, "cases": pending, "noGraph": sorted(no_graph), "trial": trial, "retried": sorted(retried)}
        cfg_path = workdir / f"trial{trial}-proc{attempts}.json"
        cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
        err_path = workdir / f"trial{trial}-proc{attempts}.stderr.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = str(PACKAGE_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        with open(err_path, "w", encoding="utf-8") as err:
            proc = subprocess.Popen(
                [python, "-m", "reruns.harness.worker", "--config", str(cfg_path)],
                stdout=subprocess.PIPE,
                stderr=err,
                stdin=subprocess.DEVNULL,
                text=True,
                cwd=str(workdir),
                env=env,
                start_new_session=True,
            )
        info["processes"] += 1
        q: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
        current: int | None = None
        deadline = time.monotonic() + startup_timeout
        said_hello = False
        while True:
            try:
                line = q.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                _kill(proc)
                if current is not None:
                    _log(f"trial {trial}: case {current} over its {case_timeout:g}s limit")
                    results[current] = {
                        "index": current,
                        "status": st.TIMEOUT,
                        "detail": f"case exceeded its time limit of {case_timeout:g} s",
                    }
                    pending.remove(current)
                else:
                    what = "start" if not said_hello else "reach the next case"
                    for idx in pending:
                        results[idx] = {
                            "index": idx,
                            "status": st.TIMEOUT,
                            "detail": f"trial process did not {what} in time",
                        }
                    pending = []
                break
            if line is None:  # worker exited
                rc = proc.wait()
                if current is not None and current not in results:
                    results[current] = {
                        "index": current,
                        "status": st.RUNTIME_ERROR,
                        "detail": f"trial process died (exit {rc}) during the case: " + _stderr_tail(err_path),
                    }
                    pending.remove(current)
                elif current is None and pending and not said_hello:
                    for idx in pending:
                        results[idx] = {
                            "index": idx,
                            "status": st.RUNTIME_ERROR,
                            "detail": f"trial process failed to start (exit {rc}): " + _stderr_tail(err_path),
                        }
                    pending = []
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            kind = msg.get("type")
            if kind == "hello":
                said_hello = True
                environment = environment or msg.get("environment")
                info["clocks"].setdefault("afterWarmup", msg.get("clocks"))
                info.setdefault("warmupSecondsDone", msg.get("warmupSecondsDone"))
                deadline = time.monotonic() + case_timeout
            elif kind == "case_start":
                current = int(msg["index"])
                deadline = time.monotonic() + case_timeout
            elif kind == "case":
                idx = int(msg["index"])
                results[idx] = msg
                if idx in pending:
                    pending.remove(idx)
                current = None
                deadline = time.monotonic() + case_timeout
                kernel_ns = msg.get("kernelMedianNs")
                _log(
                    f"trial {trial}: case {idx} {msg.get('status')} "
                    f"{msg.get('timer') or ''} "
                    f"{'' if msg.get('medianNs') is None else '%.1f us' % (msg['medianNs'] / 1e3)}"
                    f"{'' if kernel_ns is None else ' kernel_time %.1f us' % (kernel_ns / 1e3)}"
                    f"{' (' + msg['kernelTimeNote'] + ')' if msg.get('kernelTimeNote') else ''}"
                )
            elif kind == "retry":
                idx = int(msg["index"])
                _log(
                    f"trial {trial}: case {idx} failed after a failed graph capture; "
                    "running it again in a fresh process"
                )
                retried.add(idx)
                current = None
                deadline = time.monotonic() + 60
            elif kind == "graph_poisoned":
                no_graph.add(int(msg["index"]))
                current = None
                deadline = time.monotonic() + 60
            elif kind == "fatal":
                for idx in pending:
                    results[idx] = {
                        "index": idx,
                        "status": msg.get("status", st.RUNTIME_ERROR),
                        "detail": msg.get("detail"),
                    }
                pending = []
                deadline = time.monotonic() + 60
            elif kind == "done":
                info["clocks"]["atEnd"] = msg.get("clocks")
                deadline = time.monotonic() + 60
        if proc.poll() is None:
            _kill(proc)
    info["wallSeconds"] = round(time.monotonic() - started, 3)
    (workdir / f"trial{trial}-results.json").write_text(
        json.dumps({"results": results, "info": info, "environment": environment}, indent=1), encoding="utf-8"
    )
    return {"results": results, "environment": environment, "info": info}


def aggregate_case(index: int, case_id: str, per_trial: list[dict]) -> dict:
    """One case over all trials: worst status, merged correctness, per-trial medians."""
    worst = max(per_trial, key=lambda r: st.severity(r.get("status")))
    status = worst.get("status", st.RUNTIME_ERROR)
    corr = [r["correctness"] for r in per_trial if r.get("correctness")]
    correctness = None
    if corr:

        def pick(key, fn):
            vals = [c[key] for c in corr if c.get(key) is not None]
            return fn(vals) if vals else None

        correctness = {
            "maxAbsoluteError": pick("maxAbsoluteError", max),
            "maxRelativeError": pick("maxRelativeError", max),
            "matchedRatio": pick("matchedRatio", min),
            "hasNan": any(c.get("hasNan") for c in corr),
            "hasInf": any(c.get("hasInf") for c in corr),
        }
    timers = [r.get("timer") for r in per_trial if r.get("timer")]
    timer = timers[0] if timers and len(set(timers)) == 1 else ("mixed" if timers else None)
    out = {
        "index": index,
        "id": case_id,
        "status": status,
        "timer": timer,
        "timers": timers,
        "trialMediansNs": [r.get("medianNs") if r.get("status") == st.PASSED else None for r in per_trial],
        "kernelTrialMediansNs": [r.get("kernelMedianNs") if r.get("status") == st.PASSED else None for r in per_trial],
        "correctness": correctness,
    }
    activities = [r["kernelActivitiesPerCall"] for r in per_trial if r.get("kernelActivitiesPerCall") is not None]
    if activities:
        out["kernelActivitiesPerCall"] = max(activities)
    kinds: dict[str, int] = {}
    for r in per_trial:
        for k, v in (r.get("kernelActivityKinds") or {}).items():
            kinds[k] = max(kinds.get(k, 0), int(v))
    if kinds:
        out["kernelActivityKinds"] = dict(sorted(kinds.items()))
    kernel_notes = [r.get("kernelTimeNote") for r in per_trial if r.get("kernelTimeNote")]
    if kernel_notes:
        out["kernelTimeNote"] = kernel_notes[0]
    if status != st.PASSED and worst.get("detail"):
        out["detail"] = worst["detail"]
    notes = [r.get("timerNote") for r in per_trial if r.get("timerNote")]
    if notes:
        out["timerNote"] = notes[0]
    return out


def _fallback_implementation(spec: str) -> dict:
    path = Path(spec.split(":", 1)[1] if spec.startswith("baseline:") else spec)
    try:
        data = path.read_bytes()
    except OSError:
        data = spec.encode("utf-8")
    return {
        "revision": path.stem or spec,
        "languages": ["pytorch"],
        "codeDigest": "sha256:" + sha256_hex(data),
        "project": "unknown",
        "submitter": "unknown",
    }


def run_rerun(
    definition_dir: str,
    solution: str,
    *,
    trials: int = 3,
    iterations: int = 50,
    warmup_iterations: int = 10,
    warmup_seconds: float = 3.0,
    case_timeout: float = 300.0,
    startup_timeout: float | None = None,
    device: str = "cuda",
    seed: int = 1234,
    cuda_graph: bool = True,
    launch_shield: bool = True,
    kernel_timer: bool = True,
    l2_flush_bytes: int | None = None,
    max_cases: int | None = None,
    workdir: str | None = None,
    observed_at: datetime | None = None,
) -> dict:
    definition = load_definition(definition_dir)
    cases = load_workload(definition_dir)
    if max_cases is not None:
        cases = cases[:max_cases]
    try:
        impl = resolve_implementation(solution, definition)
        impl_info = impl.to_dict()
        impl_info["extra"] = impl.extra
    except ImplementationError:
        impl_info = _fallback_implementation(solution)

    settings = {
        **DEFAULT_SETTINGS,
        "iterations": iterations,
        "warmupIterations": warmup_iterations,
        "warmupSeconds": warmup_seconds,
        "trials": trials,
        "caseTimeLimitSeconds": case_timeout,
        "inputSeed": seed,
        "launchShield": launch_shield,
        "cudaGraph": cuda_graph,
        "kernelTimer": kernel_timer and device != "cpu",
    }
    if l2_flush_bytes:
        settings["l2FlushBytes"] = l2_flush_bytes
    observed = observed_at or datetime.now(UTC)
    tmp = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kernelindex-rerun-"))
    tmp.mkdir(parents=True, exist_ok=True)
    base_cfg = {
        "definition": str(Path(definition_dir).resolve()),
        "solution": solution,
        "device": device,
        "iterations": iterations,
        "warmupIterations": warmup_iterations,
        "warmupSeconds": warmup_seconds,
        "seed": seed,
        "cudaGraph": cuda_graph,
        "launchShield": launch_shield,
        "kernelTimer": settings["kernelTimer"],
        "l2FlushBytes": settings["l2FlushBytes"],
        "workdir": str(tmp),
    }
    if solution.startswith("baseline:"):
        base_cfg["solution"] = "baseline:" + str(Path(solution.split(":", 1)[1]).resolve())
    elif solution not in BUILTIN_SPECS and Path(solution).exists():
        base_cfg["solution"] = str(Path(solution).resolve())
    startup = startup_timeout if startup_timeout is not None else 180.0 + warmup_seconds

    trial_outputs = []
    for t in range(trials):
        _log(f"{definition.name} · {solution} · trial {t + 1}/{trials} (new process)")
        trial_outputs.append(run_trial(base_cfg, t, [c.index for c in cases], tmp, case_timeout, startup))
    environment = next((o["environment"] for o in trial_outputs if o["environment"]), None)
    if environment is None:
        environment = {"vendor": "nvidia", "product": "unknown", "architecture": None, "libraries": {}}
    case_results = [
        aggregate_case(
            c.index,
            c.uuid,
            [o["results"].get(c.index, {"status": st.RUNTIME_ERROR, "detail": "no result"}) for o in trial_outputs],
        )
        for c in cases
    ]
    workload_cases = [{"index": c.index, "id": c.uuid, "axes": c.axes, "tolerance": c.tolerance} for c in cases]
    env_for_doc = {k: environment.get(k) for k in ("vendor", "product", "architecture", "clocks", "libraries")}
    return build_bundle(
        definition_name=definition.name,
        cases=workload_cases,
        implementation=impl_info,
        environment=env_for_doc,
        case_results=case_results,
        observed_at=observed,
        settings=settings,
        trial_info=[o["info"] for o in trial_outputs],
        labels={"solution": _solution_label(solution)},
    )


def _solution_label(solution: str) -> str:
    if solution.startswith("baseline:"):
        return "baseline:" + Path(solution.split(":", 1)[1]).name
    if solution in BUILTIN_SPECS:
        return solution
    return Path(solution).name
