"""What the SOL-ExecBench importers share: the leaderboard's protocol and environment documents,
row validation helpers and unit conversion. Not a format of its own.

The protocol and environment documents of a leaderboard run are exactly those of the reference
bundle (``data/reference/run-01a0352b.manifest.json``), with the evaluation stack version taken
from the board, so a v1.1 board's runs declare the reference's digests
(``sha256:6383f624…`` and ``sha256:f304afb2…``).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelindex import canonical
from runs import ranking
from runs.importers.base import ImportFailure
from runs.manifests import KINDS, VerifiedBundle, canonical_time

SOURCE = "sol-execbench"
LEADERBOARD_FAMILY = "sol_execbench_leaderboard"
HARNESS_NAME = "SOL-ExecBench evaluation stack"
REFERENCE_ROWS = ("SOL Bound", "Scoring Baseline", "Reference Implementation")
SCORING_BASELINE = "Scoring Baseline"
# latency_ms × avg_speedup must give the Scoring Baseline's latency within this relative
# tolerance (avg_speedup is published rounded to 4 decimals; DESIGN §4).
IDENTITY_RTOL = 1e-3
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
    product = ranking.normalise_product(gpu_type)
    short_gpu = product.removeprefix("NVIDIA ").lower().replace(" ", "-")
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["environment"],
        "metadata": {
            "name": f"sol-execbench-{short_gpu}-{slug_version(stack_version)}",
            "title": f"SOL-ExecBench {product}, stack {stack_version}",
        },
        "spec": {
            "hardware": {"vendor": "nvidia", "product": product, "architecture": ranking.architecture_for(product)},
            "software": {"libraries": {"evaluation_stack": stack_version}},
        },
    }


class DigestCache:
    """Digests of the documents many bundles share (one protocol per board…), computed once."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[dict[str, Any], str]] = {}

    def digest(self, doc: dict[str, Any]) -> str:
        hit = self._by_id.get(id(doc))
        if hit is None or hit[0] is not doc:
            hit = (doc, canonical.digest_of(doc))
            self._by_id[id(doc)] = hit
        return hit[1]


def make_bundle(
    docs: dict[str, dict[str, Any]],
    *,
    cache: DigestCache,
    annotations: dict[str, Any] | None = None,
    origin: str = "",
) -> VerifiedBundle:
    """A VerifiedBundle of documents an importer built itself.

    The importer writes the run's declared digests from these very documents, so there is
    nothing to verify; computing the shared documents' digests once per file (not once per row)
    is what keeps a 100,000-row import fast. Tests check these bundles against
    ``bundle_verify``.
    """
    # The shared documents (protocol, environment) once per file; the rest once per row, text
    # and digest from one serialisation.
    shared = ("protocol", "environment")
    digests = {role: cache.digest(doc) for role, doc in docs.items() if role in shared}
    texts: dict[str, str] = {}
    for role, doc in docs.items():
        if role not in shared and role != "run":
            texts[role], digests[role] = canonical.document_and_digest(doc)
    run = docs["run"]
    spec = run["spec"]
    for role, key in (
        ("protocol", "protocolDigest"),
        ("environment", "environmentDigest"),
        ("workload", "workloadDigest"),
        ("implementation", "implementationDigest"),
    ):
        if role in digests:
            spec[key] = digests[role]
    texts["run"], digests["run"] = canonical.document_and_digest(run)
    declared = {role: digests[role] for role in digests if role != "run"}
    return VerifiedBundle(
        docs=docs, digests=digests, declared=declared, annotations=annotations or {}, origin=origin, texts=texts
    )


# -- row validation ---------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


class Row:
    """One object of a source file with a name for error messages ("rankings[5] (submission 19716)")."""

    def __init__(self, path: Path, where: str, value: Any) -> None:
        self.path = path
        self.where = where
        if not isinstance(value, dict):
            raise ImportFailure(path, f"must be an object, not {type_name(value)}", row=where)
        self.value = value

    def fail(self, problem: str) -> ImportFailure:
        return ImportFailure(self.path, problem, row=self.where)

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default)

    def _present(self, key: str) -> Any:
        if key not in self.value:
            raise self.fail(f"missing field {key!r}")
        return self.value[key]

    def string(self, key: str, *, optional: bool = False) -> str | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"field {key!r} must be a non-empty string, not {type_name(value)} {value!r}")
        return value

    def integer(self, key: str, *, minimum: int | None = None, optional: bool = False) -> int | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not is_int(value):
            raise self.fail(f"field {key!r} must be an integer, not {type_name(value)} {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(f"field {key!r} must be ≥ {minimum}, not {value}")
        return value

    def number(self, key: str, *, positive: bool = False, optional: bool = False) -> float | int | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not is_number(value):
            raise self.fail(f"field {key!r} must be a number, not {type_name(value)} {value!r}")
        if positive and value <= 0:
            raise self.fail(f"field {key!r} must be positive, not {value}")
        return value

    def obj(self, key: str, *, optional: bool = False) -> dict[str, Any] | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not isinstance(value, dict):
            raise self.fail(f"field {key!r} must be an object, not {type_name(value)}")
        return value

    def array(self, key: str) -> list[Any]:
        value = self._present(key)
        if not isinstance(value, list):
            raise self.fail(f"field {key!r} must be an array, not {type_name(value)}")
        return value

    def timestamp(self, key: str, *, optional: bool = False) -> datetime | None:
        """ISO 8601; no timezone means UTC (SOL-ExecBench's submitted_at has none)."""
        value = self.string(key, optional=optional)
        if value is None:
            return None
        return parse_time(value, self, key)


def parse_time(value: str, row: Row, key: str) -> datetime:
    from datetime import UTC

    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise row.fail(f"field {key!r} is not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def iso(value: datetime) -> str:
    """UTC with milliseconds and Z, as the reference's observedAt."""
    return canonical_time(value)


def ms_to_ns(value: float | int) -> float | int:
    """Milliseconds as published → nanoseconds, without float noise (0.01858 ms → 18580)."""
    ns = round(value * 1_000_000, 3)
    return int(ns) if ns == int(ns) else ns


def check_latency_identity(row: Row, latency_ms: float, avg_speedup: float, baseline_ms: float) -> None:
    """DESIGN §4: latency_ms × avg_speedup ≈ the Scoring Baseline's latency (relative 1e-3)."""
    product = latency_ms * avg_speedup
    if abs(product - baseline_ms) > IDENTITY_RTOL * baseline_ms:
        raise row.fail(
            f"latency_ms × avg_speedup = {latency_ms} × {avg_speedup} = {product:.6g} ms, but the board's "
            f"Scoring Baseline latency is {baseline_ms} ms (relative difference "
            f"{abs(product - baseline_ms) / baseline_ms:.2e} > {IDENTITY_RTOL:g})"
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


_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _evaluate(node: ast.AST, values: dict[str, Any]) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, values)
    if isinstance(node, ast.Constant) and is_number(node.value):
        return node.value
    if isinstance(node, ast.Name) and is_number(values.get(node.id)):
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, values)
    raise ValueError("unsupported expression")


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
                result = _evaluate(ast.parse(str(axis.get("expression", "")), mode="eval"), axes)
            except (ValueError, SyntaxError, ZeroDivisionError, TypeError, OverflowError):
                continue
            axes[name] = int(result) if float(result).is_integer() else result
    return axes
