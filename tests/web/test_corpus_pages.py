"""The pages with the whole corpus loaded (what scripts/serve imports: ~21,800 runs from five
sources on 19 GPU products): every page and API list keeps the query count pinned for it at 10
and 1,000 runs (tests/web/test_queries.py, test_index_queries.py, tests/api/test_query_counts.py),
and answers. The corpus is imported once for the module, inside a transaction rolled back after.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Count

from runs.models import Benchmark, ComparisonGroup, Run
from tests.factories import REPO, kept_for_the_module


@pytest.fixture(scope="module")
def corpus(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    def load() -> None:
        call_command("import", str(REPO / "data"), stdout=open("/dev/null", "w"))  # noqa: SIM115

    with kept_for_the_module(django_db_blocker, load):
        yield


@pytest.fixture
def loaded(corpus: None, db: None, settings: Any) -> None:
    # As the API's own query-count tests: throttle counters in a local-memory cache, so the
    # counts are the pages' and endpoints' own queries.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "corpus"}}
    assert Run.objects.count() >= 20_000


def _run(source: str, **filters: Any) -> Run:
    run = Run.objects.filter(source__slug=source, visibility="published", **filters).order_by("public_id").first()
    assert run is not None, (source, filters)
    return run


def pages() -> list[tuple[str, int]]:
    largest = ComparisonGroup.objects.annotate(n=Count("runs")).order_by("-n", "key").first()
    kernelbench = _run("kernelbench", rank__isnull=False)
    liger = _run("liger-kernel", rank__isnull=False)
    failed = _run("flashinfer-bench", status="failed")
    board = _run("sol-execbench", rank=1)
    relu = Benchmark.objects.get(source__slug="kernelbench", native_id="level1/19_ReLU")
    return [
        ("/", 3),
        ("/benchmarks/", 6),
        ("/benchmarks/?gpu=h100-80gb-hbm3&source=kernelbench&sort=-runs", 6),
        ("/gpus/", 1),
        ("/gpus/b200/", 4),
        ("/sources/", 1),
        ("/sources/kernelbench/", 4),
        ("/projects/", 2),
        ("/runs/", 3),  # the sources' stored counts give the count
        # the GPU's environments; its comparison groups' stored counts give the count
        ("/runs/?gpu=a100-sxm4-80gb&source=liger-kernel&sort=-latency&page=3", 5),
        ("/search/?q=relu", 4),
        # run (with whether it has published attestations and flags: none), history
        (f"/runs/{kernelbench.public_id}/", 2),
        (f"/runs/{liger.public_id}/", 2),
        (f"/runs/{failed.public_id}/", 2),
        (f"/runs/{board.public_id}/", 2),
        (f"/runs/{board.public_id}.json", 1),
        (f"/runs/{kernelbench.public_id}/compare/", 2),
        # the group (with whether it has published flags: none), a page of rows (the count is stored)
        (f"/groups/{largest.key}/", 2),
        (f"/groups/{largest.key}/?show=all&sort=-latency&page=2", 2),
        (relu.get_absolute_url(), 4),
        (relu.get_absolute_url() + "gpus/", 3),
        ("/api/v1/runs/", 1),
        ("/api/v1/runs/?ordering=-latency&gpu=H100 80GB HBM3&status=passed", 2),  # the GPU's environments, the runs
        ("/api/v1/groups/", 1),
        ("/api/v1/benchmarks/", 2),
        ("/api/v1/sources/", 1),
    ]


def test_every_page_keeps_its_pinned_query_count_with_the_corpus(
    loaded: None, client: Any, django_assert_num_queries: Any
) -> None:
    for url, queries in pages():
        with django_assert_num_queries(queries):
            response = client.get(url, HTTP_ACCEPT="application/json" if url.startswith("/api/") else "text/html")
        assert response.status_code == 200, url
