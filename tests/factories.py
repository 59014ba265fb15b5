"""Builders for test data: canonical bundles shaped like the real SOL-ExecBench imports.

Numbers here are synthetic on purpose (query-count and ranking tests need groups of 10 or 1,000
runs); tests about real results use the shipped files under data/.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.db import transaction

from ingest import engine
from kernelindex import canonical
from runs.manifests import bundle_verify

REPO = Path(__file__).resolve().parent.parent
REFERENCE_BUNDLE = REPO / "data" / "reference" / "run-01a0352b.manifest.json"
_DATA = REPO / "data"
_SOL = _DATA / "sol-execbench"
# The first batch of data/ (data/README.md's tables), which the golden export hash pins. The
# second batch, the corpus (data/corpus-README.md, ~21,800 runs), is imported whole only by the
# tests that are about it (tests/ingest/test_corpus*.py, tests/web/test_corpus_pages.py) and
# by the live site the browser tests use, as scripts/serve does.
FIRST_BATCH = [
    _SOL / "leaderboards",
    _SOL / "kernels",
    _SOL / "definitions" / "L1" / "010_attention_value_projection_with_transpose",
    _SOL / "definitions" / "L1" / "062_kv_cache_update_with_rope_backward",
    _SOL / "examples",
    _SOL / "traces",
    _DATA / "kernelbench" / "timing" / "H100_Modal" / "baseline_time_torch.json",
    _DATA / "reference",
]
# What the API's golden files describe: the first batch and KernelIndex's own H200 reruns.
FIRST_BATCH_AND_RERUNS = [*FIRST_BATCH, _DATA / "reruns"]


def reference_bundle() -> dict[str, Any]:
    return json.loads(REFERENCE_BUNDLE.read_text())


def sol_bundle(
    *,
    submission_id: int,
    username: str,
    sol_score: float,
    latency_ms: float,
    kernel: str = "062_kv_cache_update_with_rope_backward",
    gpu: str = "NVIDIA B200",
    stack: str = "v1.1",
    status: str = "passed",
    observed_at: str = "2026-07-24T02:49:25.805Z",
    reference: bool = False,
) -> dict[str, Any]:
    """A bundle like the reference one, for another submission (digests recomputed)."""
    bundle = copy.deepcopy(reference_bundle())
    protocol, environment, run = bundle["protocol"], bundle["environment"], bundle["run"]
    protocol["spec"]["harness"]["version"] = stack
    environment["spec"]["hardware"]["product"] = gpu
    environment["spec"]["software"]["libraries"]["evaluation_stack"] = stack
    spec = run["spec"]
    spec["status"] = status
    spec["observedAt"] = observed_at
    spec["timing"]["latencyNs"]["mean"] = round(latency_ms * 1e6, 3)
    native = spec["sourceNative"]
    native["benchmark"] = kernel
    native["externalId"] = str(submission_id)
    native["submitter"] = username
    if reference:
        native["isReference"] = True
    native["metrics"] = {
        "sol_score": sol_score,
        "latency_ms": latency_ms,
        "avg_speedup": round(0.0258 / latency_ms, 4),
        "fast_1_count": 16,
        "fast_1_total": 16,
    }
    spec["protocolDigest"] = canonical.digest_of(protocol)
    spec["environmentDigest"] = canonical.digest_of(environment)
    run["metadata"] = {
        "name": f"sol-submission-{submission_id}",
        "title": f"{username} · {kernel} · {gpu.removeprefix('NVIDIA ')}",
    }
    return bundle


def import_bundles(bundles: list[dict[str, Any]], **kwargs: Any) -> engine.ImportResult:
    return engine.import_bundles([bundle_verify(b) for b in bundles], **kwargs)


def sol_group(n: int, **kwargs: Any) -> engine.ImportResult:
    """Import one comparison group of n runs from n different submitters."""
    bundles = [
        sol_bundle(
            submission_id=100000 + i,
            username=f"submitter {i} | team",
            sol_score=round(0.9 - i * 0.0001, 6),
            latency_ms=round(0.02 + i * 0.00001, 6),
            **kwargs,
        )
        for i in range(n)
    ]
    return import_bundles(bundles)


@contextlib.contextmanager
def kept_for_the_module(django_db_blocker: Any, load: Callable[[], Any]) -> Iterator[None]:
    """Run ``load`` once inside a transaction that is rolled back when the block ends: the data
    stays for a module's tests, whose own transactions nest in it as savepoints."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            load()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
