"""SOL-ExecBench leaderboard API responses (``/api/leaderboard/kernel/{id}/{gpu}?evaluation_stack_version=…``).

Accepted bare (``{"data": {...}}``) or as a stored snapshot (``{"url", "retrieved_at",
"response": {"data": …}}``), whose url and retrieval time become each run's provenance.

One run per row of ``rankings``: the ranked rows and the three reference rows (SOL Bound,
Scoring Baseline, Reference Implementation), kept as unranked reference entries. Bundles have
exactly the shape of the reference bundle. Identity (DESIGN §1) is (source, kernel, GPU type,
evaluation stack version, submission id) — ``runs.identity.run_identity`` reads it from the
bundle, so one submission id on two boards is two runs.

The runs declare no workload digest: a board does not say which version of the kernel's
workload it was measured on, and declaring whichever one the index holds at import time would
make a run's digest depend on import order. Pages show the benchmark's current workload.
"""

from __future__ import annotations

from typing import Any

from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, register
from ingest.formats.sol_common import (
    REFERENCE_ROWS,
    SCORING_BASELINE,
    SOURCE,
    check_fast_1,
    latency_identity_note,
    leaderboard_environment,
    leaderboard_protocol,
)
from ingest.records import A_DATA_QUALITY, DigestCache, Row, iso, make_bundle, ms_to_ns, type_name
from kernelindex import links
from runs.manifests import A_PROVENANCE_URL, A_RETRIEVED_AT, A_SOURCE_RANK, KINDS, VerifiedBundle

FORMAT = "sol-leaderboard"


def _board(value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("response"), dict):
        value = value["response"]
    data = value.get("data")
    if isinstance(data, dict) and "rankings" in data:
        return data
    return None


def detect(loaded: Loaded) -> bool:
    return loaded.data is not None and _board(loaded.data) is not None


def parse(loaded: Loaded) -> Parsed:
    warnings: list[str] = []
    bundles = parse_bundles(loaded, warnings)
    return Parsed(
        path=loaded.path,
        format=FORMAT,
        apply=None,
        summary=f"{len(bundles)} row(s)",
        bundles=bundles,
        label=f"import: {loaded.path.name}",
        reason=f"imported from SOL-ExecBench leaderboard {loaded.path.name}",
        warnings=warnings,
    )


def parse_bundles(loaded: Loaded, warnings: list[str] | None = None) -> list[VerifiedBundle]:
    """Validate the whole board and build one bundle per row; raise ImportFailure on a structural
    problem. A row that breaks a source identity is kept, with a data-quality note, and named in
    ``warnings``."""
    warnings = warnings if warnings is not None else []
    path = loaded.path
    top = Row(path, "$", loaded.data)
    annotations: dict[str, Any] = {}
    if "response" in top.value:
        url = top.string("url")
        retrieved = top.timestamp("retrieved_at")
        why = links.problem(url)
        if why is not None:
            raise top.fail(f"field 'url' is not an http(s) URL: it {why} (got {url!r})")
        annotations = {A_PROVENANCE_URL: url, A_RETRIEVED_AT: iso(retrieved)}
        response = Row(path, "response", top.obj("response"))
    else:
        response = top
    board = Row(path, "data", response.obj("data"))
    kernel = board.string("kernel_name")
    board.integer("kernel_id", minimum=0, optional=True)
    gpu_type = board.string("gpu_type")
    stack = board.string("evaluation_stack_version")
    unit = board.get("latency_unit", "ms")
    if unit != "ms":
        raise board.fail(f"latency_unit {unit!r} is not supported (expected 'ms')")
    rankings = board.array("rankings")
    if not rankings:
        raise board.fail("'rankings' is empty")

    rows = [_row(path, index, value) for index, value in enumerate(rankings)]
    baseline_rows = [row for row in rows if row.get("is_reference") is True and row.get("username") == SCORING_BASELINE]
    if not baseline_rows:
        raise board.fail(
            "no Scoring Baseline row in 'rankings': the latency identity latency_ms × avg_speedup cannot be checked"
        )
    baseline_ms = baseline_rows[0].number("latency_ms", positive=True)

    protocol = leaderboard_protocol(stack)
    environment = leaderboard_environment(gpu_type, stack)
    cache = DigestCache()
    bundles: list[VerifiedBundle] = []
    seen: dict[str, str] = {}
    for row in rows:
        bundle = _bundle(row, kernel, gpu_type, baseline_ms, protocol, environment, annotations, cache)
        note = bundle.annotations.get(A_DATA_QUALITY)
        if note:
            warnings.append(f"{path}, {row.where}: data-quality note: {note}")
        external = bundle.run_spec["sourceNative"]["externalId"]
        if external in seen:
            raise row.fail(f"duplicate row: {seen[external]} has the same {_what(row)}")
        seen[external] = row.where
        bundles.append(bundle)
    return bundles


def _what(row: Row) -> str:
    return "reference entry" if row.get("is_reference") is True else "submission id"


def _row(path: Any, index: int, value: Any) -> Row:
    where = f"rankings[{index}]"
    if isinstance(value, dict):
        if value.get("is_reference") is True:
            where += f" (reference row {value.get('username')!r})"
        elif "submission_id" in value:
            where += f" (submission {value.get('submission_id')})"
    elif value is not None:
        raise ImportFailure(path, f"must be an object, not {type_name(value)}", row=where)
    return Row(path, where, value)


def _bundle(
    row: Row,
    kernel: str,
    gpu_type: str,
    baseline_ms: float,
    protocol: dict[str, Any],
    environment: dict[str, Any],
    annotations: dict[str, Any],
    cache: DigestCache,
) -> VerifiedBundle:
    is_reference = row.get("is_reference", False)
    if not isinstance(is_reference, bool):
        raise row.fail(f"field 'is_reference' must be a boolean, not {type_name(is_reference)}")
    username = row.string("username")
    sol_score = row.number("sol_score")
    latency_ms = row.number("latency_ms", positive=True)
    avg_speedup = row.number("avg_speedup", positive=True)
    fast_1_count = row.integer("fast_1_count", minimum=0)
    fast_1_total = row.integer("fast_1_total", minimum=0)
    check_fast_1(row, fast_1_count, fast_1_total)
    note = latency_identity_note(latency_ms, avg_speedup, baseline_ms)
    metrics = {
        "sol_score": sol_score,
        "latency_ms": latency_ms,
        "avg_speedup": avg_speedup,
        "fast_1_count": fast_1_count,
        "fast_1_total": fast_1_total,
    }
    native: dict[str, Any] = {"source": SOURCE, "benchmark": kernel, "metrics": metrics}
    spec: dict[str, Any] = {
        "status": "passed",
        "timing": {"latencyNs": {"mean": ms_to_ns(latency_ms)}, "primaryStatistic": "mean"},
        "sourceNative": native,
    }
    run_annotations = dict(annotations)
    if note:
        run_annotations[A_DATA_QUALITY] = note
    docs: dict[str, dict[str, Any]] = {"protocol": protocol, "environment": environment}
    if is_reference:
        if username not in REFERENCE_ROWS:
            raise row.fail(f"unknown reference row {username!r}; expected one of {list(REFERENCE_ROWS)}")
        if row.get("rank") is not None:
            raise row.fail(f"a reference row must be unranked, but its rank is {row.get('rank')!r}")
        native.update(externalId=f"reference/{username}", submitter=username, isReference=True)
        name = "sol-reference-" + username.lower().replace(" ", "-")
        if row.get("submitted_at") is not None:
            spec["observedAt"] = iso(row.timestamp("submitted_at"))
    else:
        rank = row.integer("rank", minimum=1)
        submission = row.integer("submission_id", minimum=0)
        observed = row.timestamp("submitted_at")
        native.update(externalId=str(submission), submitter=username)
        spec["observedAt"] = iso(observed)
        run_annotations[A_SOURCE_RANK] = rank
        name = f"sol-submission-{submission}"
        docs["implementation"] = {
            "apiVersion": protocol["apiVersion"],
            "kind": KINDS["implementation"],
            "metadata": {"name": f"sol-submission-{submission}", "title": f"{username} · submission {submission}"},
            "spec": {"project": username, "submitter": username, "revision": f"submission-{submission}"},
        }
    docs["run"] = {
        "apiVersion": protocol["apiVersion"],
        "kind": KINDS["run"],
        "metadata": {"name": name, "title": f"{username} · {kernel} · {gpu_type}"},
        "spec": spec,
    }
    return make_bundle(docs, cache=cache, annotations=run_annotations, origin=f"{row.path}, {row.where}")


register(
    Format(
        FORMAT,
        "SOL-ExecBench leaderboard API response, bare {data} or stored snapshot {url, retrieved_at, response}",
        detect,
        parse,
    )
)
