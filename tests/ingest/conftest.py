"""Helpers for the core tests: import real files through the same path as ``manage.py import``,
and a snapshot of everything an import writes (row counts and every digest)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from ingest import pipeline
from runs.models import (
    Benchmark,
    ComparisonGroup,
    Environment,
    Implementation,
    Project,
    Protocol,
    Run,
    RunRevision,
    Source,
    Workload,
)
from tests.factories import FIRST_BATCH

REPO = Path(__file__).resolve().parent.parent.parent
DATA = REPO / "data"
REFERENCE = DATA / "reference" / "run-01a0352b.manifest.json"
BOARD = DATA / "sol-execbench" / "leaderboards" / "kernel-10-B200-v1.1.json"
KERNEL_API = DATA / "sol-execbench" / "kernels" / "kernel-10.json"
DEFINITION_10 = DATA / "sol-execbench" / "definitions" / "L1" / "010_attention_value_projection_with_transpose"
TRACE = DATA / "sol-execbench" / "traces" / "kernel-10-concrete-view-initial"
KERNELBENCH = DATA / "kernelbench" / "timing" / "H100_Modal" / "baseline_time_torch.json"
# The first batch of data/ (data/README.md's tables), which the golden export hash pins
# (data/reruns/ holds KernelIndex's own rerun bundles, tested with the reruns). The second batch,
# the corpus (data/corpus-README.md), is tested in tests/ingest/test_corpus*.py.
SOL = DATA / "sol-execbench"
DATA_PATHS = FIRST_BATCH
# A fixed import time, so exports (which carry the first-publication date) are reproducible.
IMPORT_TIME = datetime(2026, 9, 7, 12, 0, tzinfo=UTC)


def import_paths(*paths: Path | str, fmt: str | None = None) -> list[str]:
    """Parse then apply, exactly as ``manage.py import`` does."""
    with mock.patch("ingest.session.timezone.now", return_value=IMPORT_TIME):
        return pipeline.apply_all(pipeline.parse_paths([str(p) for p in paths], fmt))


MODELS = (
    Source,
    Benchmark,
    Workload,
    Protocol,
    Environment,
    Project,
    Implementation,
    ComparisonGroup,
    Run,
    RunRevision,
)


def snapshot() -> dict[str, Any]:
    """Row counts of every table an import writes, and every digest and rank it stored."""
    return {
        "counts": {model.__name__: model.objects.count() for model in MODELS},
        "runs": sorted(
            Run.objects.values_list("public_id", "digest", "document", "rank", "source_rank", "group__key", "revision")
        ),
        "documents": {
            model.__name__: sorted(model.objects.values_list("digest", "document"))
            for model in (Workload, Protocol, Environment, Implementation)
        },
        "benchmarks": sorted(
            Benchmark.objects.values_list(
                "source__slug", "native_id", "title", "collection", "numeric_id", "workload__digest", "definition"
            )
        ),
    }


@pytest.fixture
def imported_data(db: Any) -> None:
    import_paths(*DATA_PATHS)
