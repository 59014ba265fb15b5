"""Building the kernelindex.dev/v1alpha1 bundle of a rerun (pure Python, no torch).

The bundle is {"run", "protocol", "environment", "workload", "implementation"}; the run's
spec carries the digests of the four other documents (DESIGN.md section 2).
"""

from __future__ import annotations

import math
import re
import statistics
from datetime import UTC, datetime
from typing import Any

from kernelindex import gpus
from kernelindex.canonical import check as check_jcs_safe
from kernelindex.canonical import digest_of as digest

from . import status as st
from .version import HARNESS_NAME, HARNESS_VERSION

API_VERSION = "kernelindex.dev/v1alpha1"
SOURCE = "sol-execbench"

DEFAULT_SETTINGS = {
    "iterations": 50,
    "warmupIterations": 10,
    "warmupSeconds": 3.0,
    "trials": 3,
    "caseTimeLimitSeconds": 300.0,
    "l2FlushBytes": 256 * 1024 * 1024,
    "inputSeed": 1234,
    "launchShield": True,
    "cudaGraph": True,
    "kernelTimer": True,
}

# The two timers, by the key they have in a bundle (timing.timers, cases[].timers).
KERNEL_TIME = "kernelTime"  # summed GPU activity durations (CUPTI via torch.profiler); primary
EVENT_TIME = "eventTime"  # CUDA events around a graph replay, or around the direct call


def normalize_product(name: str) -> str:
    """'H200' / 'NVIDIA H200' / 'nvidia h200' -> 'NVIDIA H200' (``kernelindex.gpus``, the index's
    own table, so a rerun lands in the same comparison group as the source's boards)."""
    return gpus.normalise_product(str(name))


def short_product(product: str) -> str:
    name = normalize_product(product)
    return name[len("NVIDIA ") :] if name.startswith("NVIDIA ") else name


def architecture_for(product: str, compute_capability: tuple[int, int] | None = None) -> str | None:
    if compute_capability is not None:
        major, minor = compute_capability
        return f"sm_{major}{minor}"
    return gpus.architecture_for(normalize_product(product)) or None


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def geomean(values: list[float]) -> float:
    if not values:
        raise ValueError("geomean of nothing")
    if any(v <= 0 for v in values):
        raise ValueError("geomean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _iso_z(moment: datetime | str) -> str:
    if isinstance(moment, str):
        return moment
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _compact_ts(observed_at: str) -> str:
    return (
        re.sub(r"[^0-9TZ]", "", observed_at.split(".")[0]) + "Z"
        if "." in observed_at
        else re.sub(r"[^0-9TZ]", "", observed_at)
    )


def _doc(kind: str, name: str, title: str, spec: dict, labels: dict | None = None) -> dict:
    metadata: dict[str, Any] = {"name": name, "title": title}
    if labels:
        metadata["labels"] = {str(k): str(v) for k, v in labels.items()}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


def protocol_document(settings: dict | None = None) -> dict:
    s = {**DEFAULT_SETTINGS, **(settings or {})}
    kernel_timer = bool(s.get("kernelTimer", True))
    event_time = (
        "CUDA-event time: CUDA events around one CUDA graph replay of the call where capture "
        "works and the replay reproduces the checked outputs; otherwise around the direct call "
        "(recorded per case as cuda_graph or cuda_events). Includes the graph launch and the "
        "gaps between kernels; around a direct call that waits on the host it also includes "
        "host latency"
    )
    kernel_time = (
        "kernel time (kernel_time): per iteration, the summed durations of every GPU activity "
        "the direct call launched (kernels, memcpys, memsets), from the CUPTI activity records "
        "that torch.profiler (Kineto) collects; an activity belongs to the call when the "
        "runtime/driver API call that launched it (joined by CUPTI correlation id) ran inside "
        "the call's record_function range. Same iterations, cold L2 and input restore as the "
        "event time; the L2 flush and the restore are launched outside the range and are "
        "never counted. Leaves out launch overhead, gaps between kernels and host latency; "
        "a range's device_time_total is not used"
    )
    measurement = {
        "timer": "kernel_time" if kernel_timer else "cuda_graph_or_events",
        "primaryTimer": KERNEL_TIME if kernel_timer else EVENT_TIME,
        "primaryStatistic": "median",
        "aggregation": "geomean of per-case medians",
        "iterations": int(s["iterations"]),
        "warmupIterations": int(s["warmupIterations"]),
        "warmupSeconds": float(s["warmupSeconds"]),
        "coldL2": True,
        "l2Flush": {
            "method": "write (zero) a device buffer larger than L2 before every iteration",
            "bytes": int(s["l2FlushBytes"]),
        },
        "trials": int(s["trials"]),
        "trialIsolation": "each trial in a separate process, trials run one after another",
        "trialAggregation": "per case: median over trials of the per-trial medians",
        "spread": "max/min of the per-trial geomeans of per-case medians",
        "clocks": "not locked; brought to a steady state by warmupSeconds of busy GPU work "
        "at the start of every trial process, and read after it",
        "timers": {KERNEL_TIME: kernel_time, EVENT_TIME: event_time} if kernel_timer else {EVENT_TIME: event_time},
        "primaryTimerRule": "kernelTime where every case has a kernel time in every trial; "
        "otherwise eventTime for the whole run (timing.primaryTimer says which)"
        if kernel_timer
        else "eventTime",
        "launchShield": bool(s["launchShield"]),
        "launchShieldNote": "event time only: a GPU spin kernel is queued before the start event so the host "
        "has enqueued the whole call before the GPU reaches it "
        "(host launch gaps excluded)"
        if s["launchShield"]
        else "off",
        "inputs": "fresh copy of the case inputs restored into the call's buffers before "
        "every iteration (outside the timed region)",
        "inputSeed": f"torch.manual_seed({int(s['inputSeed'])} + case index) before each "
        "case's inputs are generated (random inputs, or the definition's "
        "custom_inputs_entrypoint)",
        "caseTimeLimitSeconds": float(s["caseTimeLimitSeconds"]),
        "timeLimitEnforcement": "watchdog in the parent process kills the trial process; "
        "the case is TIMEOUT and the trial resumes in a new process",
    }
    spec = {
        "harness": {"name": HARNESS_NAME, "version": HARNESS_VERSION},
        "measurement": measurement,
        "correctness": {
            "reference": "definition reference implementation",
            "comparator": "kernelindex_allclose",
            "policy": {
                "rule": "element matches when |out - ref| <= max_atol + max_rtol * |ref| "
                "(float32, float64 for float64 outputs); case passes when matched "
                "ratio >= required_matched_ratio and max abs error <= max_error_cap "
                "where published",
                "tolerances": "per case, as published in workload.jsonl",
                "defaults": {"max_atol": 0.01, "max_rtol": 0.01, "required_matched_ratio": 1.0, "max_error_cap": None},
                "nonFinite": "NaN/Inf in an output fails the case (INCORRECT_NUMERICAL) "
                "unless the reference holds the same value at that position",
                "checks": "output count and shape (INCORRECT_SHAPE), dtype "
                "(INCORRECT_DTYPE), then values; checked in every trial, "
                "worst trial reported",
                "statuses": list(st.ALL),
            },
        },
        "comparability": {
            "family": "kernelindex_rerun",
            "notes": "Re-measured by KernelIndex on its own GPU with the KernelIndex rerun "
            "harness. Comparable only within one definition, GPU product, "
            "harness version and timer; not comparable with source-reported latencies "
            "(different GPU, timer and statistic).",
        },
        "ranking": {"metric": "latency", "direction": "ascending"},
    }
    version_slug = slug(HARNESS_VERSION)
    return _doc(
        "BenchmarkProtocol", f"kernelindex-rerun-harness-v{version_slug}", f"{HARNESS_NAME} {HARNESS_VERSION}", spec
    )


def environment_document(environment: dict) -> dict:
    vendor = environment.get("vendor") or "nvidia"
    product = normalize_product(environment["product"]) if vendor == "nvidia" else str(environment["product"])
    arch = environment.get("architecture") or architecture_for(product)
    hardware: dict[str, Any] = {"vendor": vendor, "product": product, "architecture": arch}
    if environment.get("clocks") is not None:
        hardware["clocks"] = environment["clocks"]
    libraries = {k: (None if v is None else str(v)) for k, v in (environment.get("libraries") or {}).items()}
    spec = {"hardware": hardware, "software": {"libraries": libraries}}
    name_bits = [
        short_product(product),
        *(f"{k}-{v}" for k, v in sorted(libraries.items()) if k in ("torch", "driver") and v),
    ]
    return _doc(
        "ExecutionEnvironment",
        "kernelindex-" + slug(" ".join(name_bits)),
        f"KernelIndex {product}, torch {libraries.get('torch')}",
        spec,
    )


def workload_document(definition_name: str, cases: list[dict]) -> dict:
    spec = {
        "benchmark": {"source": SOURCE, "nativeId": definition_name},
        "cases": [
            {
                "index": int(c["index"]),
                "id": str(c["id"]),
                "axes": dict(c.get("axes") or {}),
                "tolerance": dict(c.get("tolerance") or {}),
            }
            for c in cases
        ],
        "suite": {"caseCount": len(cases)},
    }
    return _doc(
        "Workload", f"sol-execbench-{slug(definition_name)}", f"{definition_name} · suite of {len(cases)} cases", spec
    )


def implementation_document(definition_name: str, implementation: dict) -> dict:
    spec: dict[str, Any] = {
        "project": implementation.get("project", "KernelIndex baselines"),
        "submitter": implementation.get("submitter", "KernelIndex"),
        "revision": implementation["revision"],
        "languages": list(implementation.get("languages") or ["pytorch"]),
        "codeDigest": implementation["codeDigest"],
    }
    for key, value in (implementation.get("extra") or {}).items():
        spec.setdefault(key, value)
    return _doc(
        "Implementation",
        f"{slug(definition_name)}-{slug(implementation['revision'])}",
        f"{implementation['revision']} · {definition_name}",
        spec,
    )


def _case_median(trial_medians: list[float | None]) -> float | None:
    vals = [v for v in trial_medians if v is not None]
    return statistics.median(vals) if vals else None


def _complete(values: list[float | None] | None, n_trials: int) -> bool:
    return len([v for v in values or [] if v]) == n_trials


def _timer_summary(results: list[dict], key: str, n_trials: int) -> dict | None:
    """Run-level figures of one timer: geomean of per-case medians, per trial, spread."""
    per_case = [c.get(key) or [] for c in results]
    if not results or not all(_complete(v, n_trials) for v in per_case):
        return None
    trials = [geomean([v[t] for v in per_case]) for t in range(n_trials)]
    ratio = max(trials) / min(trials)
    return {
        "latencyNs": {"median": _r(geomean([_case_median(v) for v in per_case]))},
        "trialLatenciesNs": [_r(v) for v in trials],
        "spread": {"maxOverMin": round(ratio, 6), "maxOverMinMinusOne": round(ratio - 1, 6)},
        "casesTimed": len(results),
    }


def run_document(
    *,
    definition_name: str,
    implementation: dict,
    product: str,
    case_results: list[dict],
    n_cases: int,
    observed_at: str,
    digests: dict[str, str],
    n_trials: int,
    trial_info: list[dict] | None,
    labels: dict | None,
) -> dict:
    """The run: per case and overall, both timers; latencyNs / trialMediansNs / timer (the
    fields every reader of a run knows) carry the primary timer's figures."""
    results = sorted(case_results, key=lambda c: int(c["index"]))
    statuses = [c["status"] for c in results]
    all_passed = len(results) == n_cases and all(s == st.PASSED for s in statuses)
    summaries = {}
    if all_passed:
        summaries = {
            KERNEL_TIME: _timer_summary(results, "kernelTrialMediansNs", n_trials),
            EVENT_TIME: _timer_summary(results, "trialMediansNs", n_trials),
        }
        summaries = {k: v for k, v in summaries.items() if v is not None}
    primary = KERNEL_TIME if KERNEL_TIME in summaries else EVENT_TIME
    timed = primary in summaries

    cases_out = []
    for c in results:
        passed = c["status"] == st.PASSED
        per_timer: dict[str, dict] = {}
        for name, key, timer in (
            (KERNEL_TIME, "kernelTrialMediansNs", "kernel_time"),
            (EVENT_TIME, "trialMediansNs", c.get("timer")),
        ):
            medians = c.get(key) or []
            median_ns = _case_median(medians) if passed else None
            if median_ns is None and name == KERNEL_TIME:
                continue
            per_timer[name] = {
                "timer": timer,
                # no latency for a case that did not pass (never null: importers want numbers)
                "latencyNs": {} if median_ns is None else {"median": _r(median_ns)},
                "trialMediansNs": [_r(v) for v in medians],
            }
        if KERNEL_TIME in per_timer and c.get("kernelActivitiesPerCall") is not None:
            per_timer[KERNEL_TIME]["activitiesPerCall"] = c["kernelActivitiesPerCall"]
            if c.get("kernelActivityKinds"):
                per_timer[KERNEL_TIME]["activityKinds"] = dict(c["kernelActivityKinds"])
        shown = per_timer.get(primary) or per_timer[EVENT_TIME]
        entry: dict[str, Any] = {
            "index": int(c["index"]),
            "id": str(c["id"]),
            "status": c["status"],
            "latencyNs": shown["latencyNs"],
            "timer": shown["timer"],
            "trialMediansNs": shown["trialMediansNs"],
            "timers": per_timer,
            "correctness": c.get("correctness")
            or {
                "maxAbsoluteError": None,
                "maxRelativeError": None,
                "matchedRatio": None,
                "hasNan": False,
                "hasInf": False,
            },
        }
        if c.get("timers") and len(set(c["timers"])) > 1:
            entry["trialTimers"] = list(c["timers"])
        if c.get("timerNote"):
            entry["timerNote"] = str(c["timerNote"])[:500]
        if c.get("kernelTimeNote"):
            entry["kernelTimeNote"] = str(c["kernelTimeNote"])[:500]
        if c.get("detail"):
            entry["detail"] = str(c["detail"])[:2000]
        cases_out.append(entry)

    trials_out: list[dict] = []
    overall = None
    spread: dict[str, Any] = {"maxOverMin": None, "maxOverMinMinusOne": None}
    if timed:
        for t in range(n_trials):
            trial: dict[str, Any] = {"index": t, "latencyNs": summaries[primary]["trialLatenciesNs"][t]}
            for name, summary in summaries.items():
                trial[f"{name}Ns"] = summary["trialLatenciesNs"][t]
            if trial_info and t < len(trial_info):
                trial.update({k: v for k, v in trial_info[t].items() if k != "index"})
            trials_out.append(trial)
        overall = summaries[primary]["latencyNs"]["median"]
        spread = dict(summaries[primary]["spread"])
    elif trial_info:
        trials_out = [
            {"index": t, **{k: v for k, v in info.items() if k != "index"}} for t, info in enumerate(trial_info)
        ]
    timers_out = {}
    for name, timer in ((KERNEL_TIME, "kernel_time"), (EVENT_TIME, "cuda_graph_or_events")):
        if name in summaries:
            timers_out[name] = {"timer": timer, **summaries[name]}

    spec: dict[str, Any] = {"status": "passed" if all_passed else "failed"}
    if not all_passed:
        failing = [s for s in statuses if s != st.PASSED]
        spec["statusDetail"] = failing[0] if failing else "INCOMPLETE"
    spec["timing"] = {
        "latencyNs": {} if overall is None else {"median": _r(overall)},
        "primaryStatistic": "median",
        "primaryTimer": primary,
        "trials": trials_out,
        "spread": spread,
        "timers": timers_out,
    }
    spec["observedAt"] = observed_at
    spec["cases"] = cases_out
    short = short_product(product)
    revision = implementation["revision"]
    spec["sourceNative"] = {
        "source": "kernelindex",
        "benchmark": definition_name,
        "externalId": f"rerun/{definition_name}/{revision}/{short}/{_compact_ts(observed_at)}",
        "metrics": {
            "cases_passed": sum(1 for s in statuses if s == st.PASSED),
            "cases_total": n_cases,
        },
    }
    if overall is not None:
        spec["sourceNative"]["metrics"]["latency_ms"] = round(overall / 1e6, 9)
    for name, metric in ((KERNEL_TIME, "kernel_time_ms"), (EVENT_TIME, "event_time_ms")):
        if name in summaries:
            spec["sourceNative"]["metrics"][metric] = round(summaries[name]["latencyNs"]["median"] / 1e6, 9)
    spec["protocolDigest"] = digests["protocol"]
    spec["workloadDigest"] = digests["workload"]
    spec["environmentDigest"] = digests["environment"]
    spec["implementationDigest"] = digests["implementation"]
    name = slug(f"rerun-{definition_name}-{revision}-{short}-{_compact_ts(observed_at)}")
    title = f"KernelIndex rerun · {revision} · {definition_name} · {short}"
    return _doc(
        "BenchmarkRun",
        name,
        title,
        spec,
        {"harness": HARNESS_NAME, "harnessVersion": HARNESS_VERSION, **(labels or {})},
    )


def build_bundle(
    *,
    definition_name: str,
    cases: list[dict],
    implementation: dict,
    environment: dict,
    case_results: list[dict],
    observed_at: datetime | str,
    settings: dict | None = None,
    trial_info: list[dict] | None = None,
    labels: dict | None = None,
) -> dict:
    """Assemble the five documents and wire the run's digests.

    cases: [{"index", "id", "axes", "tolerance"}] (the workload as published)
    implementation: {"revision", "languages", "codeDigest", "project"?, "submitter"?, "extra"?}
    environment: {"product", "architecture"?, "clocks"?, "libraries": {...}}
    case_results: [{"index", "id", "status", "timer", "trialMediansNs": [ns per trial],
                    "correctness": {...}, "detail"?}]
    """
    s = {**DEFAULT_SETTINGS, **(settings or {})}
    observed = _iso_z(observed_at)
    protocol = protocol_document(s)
    env_doc = environment_document(environment)
    workload = workload_document(definition_name, cases)
    impl_doc = implementation_document(definition_name, implementation)
    digests = {
        "protocol": digest(protocol),
        "workload": digest(workload),
        "environment": digest(env_doc),
        "implementation": digest(impl_doc),
    }
    run = run_document(
        definition_name=definition_name,
        implementation=implementation,
        product=env_doc["spec"]["hardware"]["product"],
        case_results=case_results,
        n_cases=len(cases),
        observed_at=observed,
        digests=digests,
        n_trials=int(s["trials"]),
        trial_info=trial_info,
        labels=labels,
    )
    bundle = {
        "run": run,
        "protocol": protocol,
        "environment": env_doc,
        "workload": workload,
        "implementation": impl_doc,
    }
    check_jcs_safe(bundle)
    return bundle


def verify_bundle(bundle: dict) -> list[str]:
    """Problems with a bundle's declared digests (empty list when all verify)."""
    problems = []
    spec = bundle["run"]["spec"]
    for key in ("protocol", "workload", "environment", "implementation"):
        declared = spec.get(f"{key}Digest")
        if key in bundle:
            actual = digest(bundle[key])
            if declared != actual:
                problems.append(f"{key}: declared {declared}, computed {actual}")
    return problems
