"""SOL-ExecBench trace folders: ``trial-*.jsonl`` + ``summary.json`` + ``environment.json``.

One run of one solution on one kernel, evaluated locally (not by the official leaderboard): per
case its status, median latency and correctness errors; the environment as recorded (GPU,
driver, CUDA, torch, triton, clock mode). Its protocol family is ``sol_execbench_trace``, so it
never lands in a leaderboard's comparison group. The files' SHA-256 values recorded in
``summary.json`` are checked, so a trace that was altered after the run is refused.

A folder may hold ``summary.json`` alone (most of the corpus's local runs): its per-workload
``observations`` (status, latency, environment of each trial) then stand in for the trace
records. Real runs are imported as they are (``data/corpus-README.md``): scores above 1 (a
local unlocked clock faster than T_SOL assumes) are kept, never clamped; a partial run
(``complete_problem: false``, ``problem_mean_sol_score: null``) keeps its local mean and is put
in a comparison group of its own workload subset, since a geometric mean over 2 of 16 workloads
is not comparable with one over all 16; a failed run (every workload ``INCORRECT_NUMERICAL``,
latencies null) is recorded as failed, with no latency.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.catalogue import workload_document
from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, register
from ingest.formats.sol_common import SOL_AGGREGATION, SOURCE, make_case
from ingest.records import DigestCache, Row, iso, make_bundle, ms_to_ns
from kernelindex import canonical
from kernelindex.gpus import architecture_for, normalise_product
from runs.identity import humanize_benchmark_name
from runs.manifests import KINDS, VerifiedBundle

FORMAT = "sol-trace"
FAMILY = "sol_execbench_trace"


def detect(loaded: Loaded) -> bool:
    if not loaded.is_folder or "summary.json" not in loaded.files:
        return False
    if any(name.startswith("trial-") and name.endswith(".jsonl") for name in loaded.files):
        return True
    data = loaded.files["summary.json"].data
    return isinstance(data, dict) and "problem_name" in data and "workloads" in data


def parse(loaded: Loaded) -> Parsed:
    bundle = parse_bundle(loaded)
    return Parsed(
        path=loaded.path,
        format=FORMAT,
        apply=None,
        summary="1 run",
        bundles=[bundle],
        label=f"import: {loaded.path.name}",
        reason=f"imported from SOL-ExecBench trace {loaded.path.name}",
    )


def _trials(loaded: Loaded) -> dict[str, Loaded]:
    return {name: item for name, item in sorted(loaded.files.items()) if re.fullmatch(r"trial-\d+\.jsonl", name)}


def _check_sha(loaded: Loaded, summary: Row, name: str, declared: Any, key: str) -> None:
    if declared is None:
        return
    actual = canonical.sha256_hex(loaded.files[name].path.read_bytes())
    if declared != actual:
        raise summary.fail(f"{key} says {name} has SHA-256 {declared}, but the file has {actual}")


def parse_bundle(loaded: Loaded) -> VerifiedBundle:
    if not detect(loaded):
        raise ImportFailure(loaded.path, "a trace folder needs summary.json and trial-N.jsonl files")
    summary_file = loaded.files["summary.json"]
    summary = Row(summary_file.path, "$", summary_file.data)
    problem = summary.string("problem_name")
    stack = summary.string("evaluation_stack")
    evaluator = summary.string("evaluator_revision", optional=True) or ""
    passed = summary.get("passed")
    if not isinstance(passed, bool):
        raise summary.fail("field 'passed' must be a boolean")
    geomean_ms = summary.number("geometric_mean_latency_ms", positive=True, optional=passed is False)
    sol_score = summary.number("problem_mean_sol_score", optional=True)
    recorded = summary.timestamp("recorded_at")
    trials_requested = summary.integer("requested_trials", minimum=1)
    clock_mode = summary.string("clock_mode", optional=True) or "unknown"
    submission_sha = summary.string("submission_sha256")
    trace_sha = summary.obj("trace_sha256", optional=True) or {}
    trials = _trials(loaded)
    for name in trials:
        _check_sha(loaded, summary, name, trace_sha.get(name), "trace_sha256")
    if "environment.json" in loaded.files:
        _check_sha(loaded, summary, "environment.json", summary.get("environment_sha256"), "environment_sha256")
    if "score-source.json" in loaded.files:
        _check_sha(loaded, summary, "score-source.json", summary.get("score_source_sha256"), "score_source_sha256")

    # Per-case records of every trial, by workload uuid.
    records: dict[str, list[dict[str, Any]]] = {}
    solution = ""
    trace_env: dict[str, Any] = {}
    for trial in trials.values():
        lines = [(1, trial.data)] if trial.data is not None else trial.lines
        for number, value in lines:
            row = Row(trial.path, f"line {number}", value)
            if row.string("definition") != problem:
                raise row.fail(f"definition {row.get('definition')!r} is not the summary's problem {problem!r}")
            workload = Row(trial.path, f"line {number} workload", row.obj("workload"))
            evaluation = Row(trial.path, f"line {number} evaluation", row.obj("evaluation"))
            evaluation.string("status")
            solution = row.string("solution")
            trace_env = evaluation.obj("environment", optional=True) or trace_env
            records.setdefault(workload.string("uuid"), []).append(
                {"workload": workload.value, "evaluation": evaluation.value}
            )

    cases = []
    results = []
    workload_cases = []
    for index, value in enumerate(summary.array("workloads")):
        row = Row(summary_file.path, f"workloads[{index}]", value)
        uuid = row.string("uuid")
        if uuid not in records and not trials:
            records[uuid] = _observations(row)
            trace_env = next(
                (r["evaluation"]["environment"] for r in records[uuid] if r["evaluation"]["environment"]), trace_env
            )
        median_ms = row.number("latency_ms_median", positive=True, optional=row.get("passed") is False)
        case_records = records.get(uuid)
        if not case_records:
            raise row.fail(f"workload {uuid} has no trace record in {', '.join(trials)}")
        statuses = sorted({str(r["evaluation"]["status"]).lower() for r in case_records})
        status = "passed" if statuses == ["passed"] and row.get("passed") is True else "failed"
        correctness = [r["evaluation"].get("correctness") or {} for r in case_records]
        result: dict[str, Any] = {
            "index": index,
            "id": uuid,
            "status": status,
            "latencyNs": {"median": ms_to_ns(median_ms)} if median_ms is not None else {},
            "trials": len(case_records),
            "correctness": {
                "maxAbsoluteError": max((c.get("max_absolute_error") or 0) for c in correctness),
                "maxRelativeError": max((c.get("max_relative_error") or 0) for c in correctness),
                "hasNan": any(c.get("has_nan") for c in correctness),
                "hasInf": any(c.get("has_inf") for c in correctness),
            },
        }
        score = row.number("median_latency_sol_score", optional=True)
        if score is not None:
            result["solScore"] = score
        results.append(result)
        cases.append(status)
        trace_workload = case_records[0]["workload"]
        workload_cases.append(
            make_case(
                index=index,
                case_id=uuid,
                axes=row.obj("axes", optional=True) or trace_workload.get("axes") or {},
                tolerance=trace_workload.get("tolerance"),
                sol_ms=row.number("sol_ms", positive=True, optional=True),
                baseline_ms=row.number("baseline_latency_ms", positive=True, optional=True),
            )
        )
    if len(records) != len(results):
        raise summary.fail(f"the trials have {len(records)} workloads but the summary lists {len(results)}")
    status = "passed" if passed and all(case == "passed" for case in cases) else "failed"
    partial = _partial(summary, [result["id"] for result in results])
    version = stack if partial is None else f"{stack}, {partial}"

    environment = _environment(loaded, trace_env, stack, evaluator, clock_mode)
    protocol = {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["protocol"],
        "metadata": {
            "name": f"sol-execbench-local-trace-{stack.lower().replace('.', '-')}",
            "title": f"SOL-ExecBench local evaluation {stack}",
        },
        "spec": {
            "harness": {"name": "SOL-ExecBench local evaluation", "version": version, "revision": evaluator},
            "correctness": {
                "reference": "definition reference implementation",
                "comparator": "sol_execbench_eval",
                "policy": "each case within its workload tolerance",
            },
            "measurement": {
                "timer": "harness_reported",
                "primaryStatistic": "geomean",
                "perCase": "median across trials",
                "trials": trials_requested,
                "clocks": clock_mode,
            },
            "scoring": {
                "formula": summary.get("score_formula") or "",
                "aggregation": summary.get("score_aggregation") or SOL_AGGREGATION,
            },
            "comparability": {
                "family": FAMILY,
                "notes": (
                    "Unofficial local evaluation "
                    f"({summary.get('result_scope') or 'not a leaderboard result'}). "
                    "Never compared with leaderboard runs."
                ),
            },
        },
    }
    workload = workload_document(
        source=SOURCE,
        native_id=problem,
        title=humanize_benchmark_name(problem),
        cases=workload_cases,
        aggregation=SOL_AGGREGATION,
    )
    implementation = {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["implementation"],
        "metadata": {"name": solution, "title": solution},
        "spec": {"revision": solution, "codeDigest": canonical.DIGEST_PREFIX + submission_sha},
    }
    metrics: dict[str, Any] = {
        "latency_ms": geomean_ms,
        "passed_cases": cases.count("passed"),
        "total_cases": len(cases),
    }
    if geomean_ms is None:
        del metrics["latency_ms"]
    if sol_score is not None:
        metrics["sol_score"] = sol_score
    if partial is not None:
        # The run's own mean over the workloads it ran; not a problem score.
        metrics["local_mean_sol_score"] = summary.number("local_mean_sol_score", optional=True)
        metrics["selected_workloads"] = len(results)
        metrics["total_workloads"] = summary.integer("total_workloads", minimum=1)
    below = sum(1 for value in summary.array("workloads") if isinstance(value, dict) and value.get("below_sol_bound"))
    if below:
        # Kept as published: faster than T_SOL on a local unlocked clock gives scores above 1.
        metrics["cases_below_sol_bound"] = below
    run = {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["run"],
        "metadata": {
            "name": f"sol-trace-{submission_sha[:12]}",
            "title": f"{solution} · {problem} · {environment['spec']['hardware']['product'].removeprefix('NVIDIA ')}",
        },
        "spec": {
            "status": status,
            "timing": {
                "latencyNs": {"geomean": ms_to_ns(geomean_ms)} if geomean_ms is not None else {},
                "primaryStatistic": "geomean",
            },
            "observedAt": iso(recorded),
            "cases": results,
            "sourceNative": {
                "source": SOURCE,
                "benchmark": problem,
                "externalId": f"local/{submission_sha[:12]}/{recorded.strftime('%Y%m%dT%H%M%SZ')}",
                "metrics": metrics,
            },
        },
    }
    docs = {
        "run": run,
        "protocol": protocol,
        "environment": environment,
        "workload": workload,
        "implementation": implementation,
    }
    return make_bundle(docs, cache=DigestCache(), origin=str(loaded.path))


def _observations(row: Row) -> list[dict[str, Any]]:
    """A summary-only folder: the workload's per-trial observations as trace-like records."""
    out = []
    for index, value in enumerate(row.array("observations")):
        obs = Row(row.path, f"{row.where} observations[{index}]", value)
        out.append(
            {
                "workload": {"uuid": row.get("uuid"), "axes": row.get("axes") or {}},
                "evaluation": {
                    "status": obs.string("status"),
                    "environment": obs.obj("environment", optional=True) or {},
                    "performance": {"latency_ms": obs.number("latency_ms", positive=True, optional=True)},
                },
            }
        )
    if not out:
        raise row.fail("workload has no observations and the folder has no trial-N.jsonl")
    return out


def _partial(summary: Row, uuids: list[str]) -> str | None:
    """'partial: 2 of 16 workloads <digest>' for a run of a workload subset, else None."""
    if summary.get("complete_problem") is not False:
        return None
    total = summary.integer("total_workloads", minimum=1)
    subset = canonical.sha256_hex(canonical.dumps_str(sorted(uuids)).encode())[:12]
    return f"partial: {len(uuids)} of {total} workloads {subset}"


def _environment(loaded: Loaded, trace_env: dict[str, Any], stack: str, evaluator: str, clocks: str) -> dict[str, Any]:
    libs = trace_env.get("libs") if isinstance(trace_env.get("libs"), dict) else {}
    product = normalise_product(str(trace_env.get("hardware") or ""))
    hardware: dict[str, Any] = {"vendor": "nvidia", "clocks": clocks}
    software: dict[str, Any] = {"libraries": {k: str(v) for k, v in libs.items()}}
    software["libraries"]["evaluation_stack"] = stack
    if evaluator:
        software["evaluator"] = evaluator
    if "environment.json" in loaded.files:
        env = Row(loaded.files["environment.json"].path, "$", loaded.files["environment.json"].data)
        gpu = env.obj("gpu", optional=True) or {}
        lines = str(gpu.get("stdout") or "").splitlines()
        if len(lines) >= 2:
            header = [h.strip() for h in lines[0].split(",")]
            values = [v.strip() for v in lines[1].split(",")]
            info = dict(zip(header, values, strict=False))
            product = normalise_product(info.get("name", "")) or product
            if info.get("driver_version"):
                hardware["driver"] = info["driver_version"]
        nvcc = re.search(r"release [\d.]+, V([\d.]+)", str((env.obj("nvcc", optional=True) or {}).get("stdout", "")))
        if nvcc:
            software["libraries"]["nvcc"] = nvcc.group(1)
        packages = env.obj("packages", optional=True) or {}
        if isinstance(packages.get("sol-execbench"), str):
            software["libraries"]["sol-execbench"] = packages["sol-execbench"]
        python = env.get("python")
        if isinstance(python, str) and python.split():
            software["python"] = python.split()[0]
        flag = (env.obj("environment", optional=True) or {}).get("SOL_EXECBENCH_CLOCKS_LOCKED")
        if flag in ("0", "1") and clocks == "unknown":
            hardware["clocks"] = "locked" if flag == "1" else "unlocked"
    if not product:
        raise ImportFailure(loaded.path, "the trace does not say which GPU it ran on")
    hardware["product"] = product
    hardware["architecture"] = architecture_for(product)
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["environment"],
        "metadata": {
            "name": f"local-{product.removeprefix('NVIDIA ').lower().replace(' ', '-')}-{hardware.get('driver', '')}",
            "title": f"{product} · driver {hardware.get('driver', '?')} · clocks {hardware['clocks']}",
        },
        "spec": {"hardware": hardware, "software": software},
    }


register(Format(FORMAT, "SOL-ExecBench trace folder (trial-N.jsonl, summary.json, environment.json)", detect, parse))
