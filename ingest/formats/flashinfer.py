"""FlashInfer-Bench trace JSONL (the schema SOL-ExecBench's traces share; see ``sol_trace``).

One record per (solution, workload): ``definition``, ``workload`` {uuid, axes}, ``solution``,
``evaluation`` {status, environment {hardware, libs}, timestamp, performance {latency_ms,
reference_latency_ms, speedup_factor}, correctness}. ``latency_ms`` is the median over the timed
iterations (``time_runnable`` → ``statistics.median``); here the reference *is* timed, so
``reference_latency_ms`` and ``speedup_factor`` are real.

One run per record, its GPU from the record (``NVIDIA A800-SXM4-80GB`` in the corpus). A record
whose status is not ``PASSED`` (``INCORRECT_NUMERICAL``…) is a failed run: recorded with its
status, never with a latency, even when it carries a ``performance`` block. A comparison group is
one definition, one workload (the axes differ in size), one GPU: solutions rank by median latency.
"""

from __future__ import annotations

from typing import Any

from ingest.catalogue import BenchmarkFacts
from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, register
from ingest.formats.liger import provenance_url
from ingest.records import DigestCache, Row, environment_document, iso, make_bundle, ms_to_ns
from kernelindex import canonical
from runs.identity import humanize_benchmark_name
from runs.manifests import A_PROVENANCE_URL, KINDS, VerifiedBundle

FORMAT = "flashinfer-trace"
SOURCE = "flashinfer-bench"
FAMILY = "flashinfer_bench_trace"
_KEYS = {"definition", "workload", "solution", "evaluation"}


def _records(loaded: Loaded) -> list[tuple[int, Any]]:
    return [(1, loaded.data)] if loaded.data is not None else loaded.lines


def detect(loaded: Loaded) -> bool:
    records = _records(loaded)
    return (
        loaded.path.suffix == ".jsonl"
        and bool(records)
        and isinstance(records[0][1], dict)
        and _KEYS <= set(records[0][1])
    )


def parse(loaded: Loaded) -> Parsed:
    facts, bundles = parse_file(loaded)
    failed = sum(1 for bundle in bundles if bundle.run_spec["status"] != "passed")
    return Parsed(
        path=loaded.path,
        format=FORMAT,
        apply=None,
        summary=f"{len(bundles)} record(s), {failed} failed",
        facts=facts,
        bundles=bundles,
        label=f"import: {loaded.path.name}",
        reason=f"imported from FlashInfer-Bench trace {loaded.path.name}",
    )


def parse_file(loaded: Loaded) -> tuple[list[BenchmarkFacts], list[VerifiedBundle]]:
    path = loaded.path
    if not detect(loaded):
        raise ImportFailure(
            path, "not a FlashInfer-Bench trace (JSONL of {definition, workload, solution, evaluation})"
        )
    url = provenance_url(path)
    annotations = {A_PROVENANCE_URL: url} if url else {}
    cache = DigestCache()
    shared: dict[tuple[str, ...], dict[str, Any]] = {}
    facts: dict[str, BenchmarkFacts] = {}
    bundles: list[VerifiedBundle] = []
    for number, value in _records(loaded):
        row = Row(path, f"line {number}", value)
        definition = row.string("definition")
        solution = row.string("solution")
        workload = Row(path, f"line {number} workload", row.obj("workload"))
        uuid = workload.string("uuid")
        axes = workload.obj("axes", optional=True) or {}
        evaluation = Row(path, f"line {number} evaluation", row.obj("evaluation"))
        status = evaluation.string("status")
        observed = evaluation.timestamp("timestamp", optional=True)
        env = Row(path, f"line {number} evaluation.environment", evaluation.obj("environment"))
        hardware = env.string("hardware")
        libs = env.obj("libs", optional=True) or {}
        passed = status == "PASSED"
        metrics: dict[str, Any] = {"status": status}
        timing: dict[str, Any] = {"primaryStatistic": "median"}
        if passed:
            performance = Row(path, f"line {number} evaluation.performance", evaluation.obj("performance"))
            latency = performance.number("latency_ms", positive=True)
            timing["latencyNs"] = {"median": ms_to_ns(latency)}
            metrics["latency_ms"] = latency
            for key in ("reference_latency_ms", "speedup_factor"):
                if performance.get(key) is not None:
                    metrics[key] = performance.number(key)
        if definition not in facts:
            facts[definition] = BenchmarkFacts(
                source=SOURCE, native_id=definition, title=humanize_benchmark_name(definition), origin=str(path)
            )
        axes_text = ", ".join(f"{name}={axes[name]}" for name in sorted(axes))
        env_key = (hardware, canonical.dumps_str(libs))
        if env_key not in shared:
            shared[env_key] = _environment(hardware, libs)
        environment = shared[env_key]
        if ("protocol", uuid) not in shared:
            shared[("protocol", uuid)] = _protocol(uuid, axes_text)
        protocol = shared[("protocol", uuid)]
        spec: dict[str, Any] = {
            "status": "passed" if passed else "failed",
            "timing": timing,
            "sourceNative": {
                "source": SOURCE,
                "benchmark": definition,
                "externalId": f"{solution}/{uuid}/{evaluation.get('timestamp') or ''}",
                "submitter": solution,
                "metrics": metrics,
            },
        }
        if not passed:
            spec["statusDetail"] = status
        if observed is not None:
            spec["observedAt"] = iso(observed)
        product = environment["spec"]["hardware"]["product"]
        run = {
            "apiVersion": canonical.API_VERSION,
            "kind": KINDS["run"],
            "metadata": {
                "name": f"fib-{solution}"[:200],
                "title": f"{solution} · {definition} · {axes_text} · {product.removeprefix('NVIDIA ')}",
            },
            "spec": spec,
        }
        docs = {"run": run, "protocol": protocol, "environment": environment}
        bundles.append(make_bundle(docs, cache=cache, annotations=annotations, origin=f"{path}, {row.where}"))
    if not bundles:
        raise ImportFailure(path, "no records in the file")
    return list(facts.values()), bundles


def _protocol(uuid: str, axes_text: str) -> dict[str, Any]:
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["protocol"],
        "metadata": {"name": f"flashinfer-bench-trace-{uuid[:8]}", "title": f"FlashInfer-Bench trace, {axes_text}"},
        "spec": {
            # One workload per group: its uuid (and, for people, its axes) in the version.
            "harness": {"name": "FlashInfer-Bench", "version": f"workload {uuid[:8]} ({axes_text})"[:100]},
            "measurement": {"timer": "cuda_event", "primaryStatistic": "median", "workload": uuid},
            "correctness": {"reference": "definition reference implementation", "policy": "status PASSED"},
            "ranking": {"metric": "latency", "direction": "asc", "bestPer": "submitter"},
            "comparability": {
                "family": FAMILY,
                "notes": "FlashInfer-Bench traces: comparable only within one definition, workload and GPU.",
            },
        },
    }


def _environment(hardware: str, libs: dict[str, Any]) -> dict[str, Any]:
    return environment_document(hardware, name_prefix="fib", libraries=libs)


register(
    Format(
        FORMAT, "FlashInfer-Bench trace JSONL ({definition, workload, solution, evaluation} per line)", detect, parse
    )
)
