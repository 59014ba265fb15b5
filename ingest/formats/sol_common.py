"""What the SOL-ExecBench formats share: the leaderboard's protocol and environment documents,
the source's identities and its workload cases. Not a format of its own.

The protocol and environment documents of a leaderboard run are exactly those of the reference
bundle (``data/reference/run-01a0352b.manifest.json``), with the evaluation stack version taken
from the board, so a v1.1 board's runs declare the reference's digests
(``sha256:6383f624…`` and ``sha256:f304afb2…``).
"""

from __future__ import annotations

import re
from typing import Any

from ingest.records import Row, ms_to_ns
from kernelindex import canonical
from kernelindex.axes import evaluate
from kernelindex.gpus import architecture_for, normalise_product
from runs.manifests import KINDS

SOURCE = "sol-execbench"
LEADERBOARD_FAMILY = "sol_execbench_leaderboard"
HARNESS_NAME = "SOL-ExecBench evaluation stack"
REFERENCE_ROWS = ("SOL Bound", "Scoring Baseline", "Reference Implementation")
SCORING_BASELINE = "Scoring Baseline"
# avg_speedup is published rounded to this many decimals (DESIGN §4).
SPEEDUP_DECIMALS = 4
# "suite of 16 cases · …": how SOL-ExecBench turns per-case results into a board row.
SOL_AGGREGATION = (
    "latency: geometric mean over cases of the per-case median latency; "
    "sol_score: arithmetic mean of per-case scores 1/(1 + (T_k − T_SOL)/(T_b − T_SOL)); "
    "avg_speedup: geometric mean of T_b/T_k against the Scoring Baseline"
)


def slug_version(version: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", version.lower()).strip("-")


def leaderboard_protocol(stack_version: str) -> dict[str, Any]:
    """The reference bundle's protocol, for any evaluation stack version."""
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["protocol"],
        "metadata": {
            "name": f"sol-execbench-leaderboard-{slug_version(stack_version)}",
            "title": f"{HARNESS_NAME} {stack_version}",
        },
        "spec": {
            "harness": {"name": HARNESS_NAME, "version": stack_version},
            "correctness": {
                "reference": "definition reference implementation",
                "comparator": "sol_execbench_eval",
            },
            "measurement": {"timer": "harness_reported", "primaryStatistic": "mean"},
            "comparability": {
                "notes": (
                    "Suite-mean latency and SOL-Score as published by the SOL-ExecBench leaderboard. "
                    "Comparable only within one definition, GPU type, and evaluation stack version."
                ),
                "family": LEADERBOARD_FAMILY,
            },
        },
    }


def leaderboard_environment(gpu_type: str, stack_version: str) -> dict[str, Any]:
    """The reference bundle's environment: the board's GPU type (normalised) and stack version."""
    product = normalise_product(gpu_type)
    short_gpu = product.removeprefix("NVIDIA ").lower().replace(" ", "-")
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["environment"],
        "metadata": {
            "name": f"sol-execbench-{short_gpu}-{slug_version(stack_version)}",
            "title": f"SOL-ExecBench {product}, stack {stack_version}",
        },
        "spec": {
            "hardware": {"vendor": "nvidia", "product": product, "architecture": architecture_for(product)},
            "software": {"libraries": {"evaluation_stack": stack_version}},
        },
    }


def published_half_unit(value: float) -> float:
    """Half a unit in the last decimal place a number was published with (0.01858 → 5e-6)."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        mantissa, exponent = text.lower().split("e")
        decimals = len(mantissa.partition(".")[2].rstrip("0")) - int(exponent)
    else:
        decimals = len(text.partition(".")[2].rstrip("0"))
    return 0.5 * 10.0 ** (-decimals)


def identity_tolerance(latency_ms: float, avg_speedup: float, baseline_ms: float) -> float:
    """The relative error latency_ms × avg_speedup ≈ T_b can carry from rounding alone.

    avg_speedup is rounded to 4 decimals, so it is off by up to 0.5e-4, i.e. 0.5e-4 / avg_speedup
    relative (0.66 % for a speedup of 0.0076); the two latencies are off by half a unit of the
    last digit they are published with. Relative errors of a product add (to first order).
    """
    return (
        0.5 * 10.0**-SPEEDUP_DECIMALS / avg_speedup
        + published_half_unit(latency_ms) / latency_ms
        + published_half_unit(baseline_ms) / baseline_ms
    )


def latency_identity_note(latency_ms: float, avg_speedup: float, baseline_ms: float) -> str | None:
    """DESIGN §4: latency_ms × avg_speedup = the Scoring Baseline's latency, within the precision
    the source publishes. None when it holds; else the data-quality note for the row (a row that
    breaks the identity is imported as published, with the note; it never refuses the board)."""
    product = latency_ms * avg_speedup
    gap = abs(product - baseline_ms) / baseline_ms
    tolerance = identity_tolerance(latency_ms, avg_speedup, baseline_ms)
    if gap <= tolerance:
        return None
    return (
        f"latency_ms × avg_speedup = {latency_ms} × {avg_speedup} = {product:.6g} ms, but the board's Scoring "
        f"Baseline latency is {baseline_ms} ms: {gap * 100:.3g} % apart, more than the "
        f"{tolerance * 100:.3g} % the published rounding allows. Imported as published."
    )


def check_fast_1(row: Row, count: int, total: int) -> None:
    if count > total:
        raise row.fail(f"fast_1_count {count} is greater than fast_1_total {total}")


COLLECTIONS = ("L1", "L2", "Quant", "FlashInfer-Bench")


def collection_from_tags(tags: list[Any]) -> str:
    for tag in tags:
        if tag in COLLECTIONS:
            return tag
    return ""


# -- workload cases ---------------------------------------------------------------------------


def make_case(
    *,
    index: int,
    case_id: str | None,
    axes: dict[str, Any],
    tolerance: dict[str, Any] | None,
    sol_ms: float | None = None,
    baseline_ms: float | None = None,
    hardware: str | None = None,
) -> dict[str, Any]:
    """One case of a Workload document; id and tolerance are always present (null: unpublished)."""
    case: dict[str, Any] = {"index": index, "id": case_id, "axes": axes, "tolerance": tolerance}
    if sol_ms is not None:
        case["solLatencyNs"] = ms_to_ns(sol_ms)
    if baseline_ms is not None:
        case["baselineLatencyNs"] = ms_to_ns(baseline_ms)
    if hardware:
        case["hardware"] = hardware
    return case


def full_axes(definition_axes: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Every axis of a case: the definition's constants, the case's variables, and the
    definition's expressions evaluated over them (arithmetic only; an expression that cannot
    be evaluated is left out rather than guessed)."""
    axes = dict(values)
    for name, axis in definition_axes.items():
        if isinstance(axis, dict) and axis.get("type") == "const" and name not in axes:
            axes[name] = axis.get("value")
    for name, axis in definition_axes.items():
        if isinstance(axis, dict) and axis.get("type") == "expr" and name not in axes:
            try:
                result = evaluate(str(axis.get("expression", "")), axes)
            except (KeyError, ValueError, ZeroDivisionError, TypeError, OverflowError):
                continue
            axes[name] = int(result) if float(result).is_integer() else result
    return axes
