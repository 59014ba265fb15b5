"""Every list endpoint costs the same few queries for 10 runs as for 1,000.

Each case lists the queries it makes; anonymous requests cost no authentication query, and the
throttle counters live in the cache (local memory here), not in these counts.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from attestations.models import Attestation, AttestationKind, AttestationState
from kernelindex import canonical
from runs.models import ComparisonGroup, Run
from tests.api.conftest import import_spread

pytestmark = pytest.mark.django_db

# endpoint → (queries, what they are)
LISTS = {
    "/api/v1/runs/": (1, "runs joined with source, benchmark, group, environment, implementation, project, protocol"),
    "/api/v1/runs/?ordering=rank&limit=500": (1, "the same, ordered by rank"),
    "/api/v1/runs/?ordering=-latency&gpu=B200&status=passed": (2, "the GPU's environments; the runs, filtered"),
    "/api/v1/runs/?source=sol-execbench&architecture=sm_100": (3, "the source; the environments; the runs"),
    "/api/v1/runs/?benchmarkSource=sol-execbench&ranked=false&observedBefore=2030-01-01": (
        3,
        "the benchmarks' sources (their groups'); the benchmarks; the runs",
    ),
    "/api/v1/runs/?benchmark=10&architecture=sm_100": (
        3,
        "the benchmark's ids (beside an architecture); the architecture's environments; the runs",
    ),
    "/api/v1/runs/?family=sol_execbench_leaderboard": (3, "the family's runs per source; its groups' ids; the runs"),
    "/api/v1/groups/": (1, "groups with source and benchmark, run count as a subquery"),
    "/api/v1/benchmarks/": (2, "benchmarks with source and run count; their groups (one prefetch)"),
    "/api/v1/sources/": (1, "sources with run and benchmark counts as subqueries"),
    "/api/v1/protocols/": (1, "protocols"),
    "/api/v1/environments/": (1, "environments"),
    "/api/v1/workloads/": (1, "workloads with benchmark and source"),
    "/api/v1/implementations/": (1, "implementations with project"),
    "/api/v1/attestations/?limit=500": (1, "published attestations with their run"),
    "/api/v1/runs/export/csv/": (1, "one streamed query"),
    "/api/v1/runs/export/jsonl/": (1, "one streamed query"),
    "/api/v1/runs/export/bundles/": (1, "one streamed query with the four documents joined"),
}


def add_published_attestations(count: int) -> None:
    runs = list(Run.objects.order_by("public_id").values_list("pk", "digest")[:count])
    now = timezone.now()
    Attestation.objects.bulk_create(
        Attestation(
            run_id=pk,
            kind=AttestationKind.NOTE,
            state=AttestationState.PUBLISHED,
            digest=canonical.key_digest({"test-note": index}),
            reference=f"A-test{index:06d}",
            document=canonical.dumps_str({"kind": "Attestation", "subject": digest, "index": index}),
            text="Measured the same on our B200.",
            reviewed_at=now,
        )
        for index, (pk, digest) in enumerate(runs)
    )


def group_key() -> str:
    return ComparisonGroup.objects.order_by("key").values_list("key", flat=True).first()


@pytest.mark.parametrize("runs", [10, 1000])
@pytest.mark.parametrize("url", list(LISTS))
def test_list_queries_are_flat(client: Any, django_assert_num_queries: Any, runs: int, url: str) -> None:
    import_spread(runs)
    add_published_attestations(runs // 2)
    expected, _what = LISTS[url]
    with django_assert_num_queries(expected):
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
    assert response.status_code == 200
    assert body


@pytest.mark.parametrize("runs", [10, 1000])
def test_a_group_ranking_costs_two_queries(client: Any, django_assert_num_queries: Any, runs: int) -> None:
    """The group (with source and benchmark), then its ranking rows."""
    import_spread(runs)
    key = group_key()
    with django_assert_num_queries(2):
        response = client.get(f"/api/v1/groups/{key}/")
    assert response.status_code == 200
    assert len(response.json()["rows"]) == Run.objects.filter(group__key=key, rank__isnull=False).count()


@pytest.mark.parametrize("runs", [10, 1000])
def test_a_run_costs_one_query(client: Any, django_assert_num_queries: Any, runs: int) -> None:
    import_spread(runs)
    public_id = Run.objects.order_by("public_id").values_list("public_id", flat=True).first()
    with django_assert_num_queries(1):
        assert client.get(f"/api/v1/runs/{public_id}/").status_code == 200


def test_exports_have_every_run(client: Any) -> None:
    import_spread(1000)
    csv_body = b"".join(client.get("/api/v1/runs/export/csv/").streaming_content).decode()
    assert len(csv_body.splitlines()) == 1001
    jsonl = b"".join(client.get("/api/v1/runs/export/jsonl/").streaming_content).decode().splitlines()
    bundles = b"".join(client.get("/api/v1/runs/export/bundles/").streaming_content).decode().splitlines()
    assert len(jsonl) == len(bundles) == 1000
