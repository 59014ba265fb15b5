"""The index pages, the cross-GPU view and the run tables' downloads: query counts pinned, the
same with 10 and with 1,000 runs, over two GPUs (two comparison groups of one benchmark)."""

from __future__ import annotations

import pytest
from django.core.cache import caches

from runs.models import Benchmark, Implementation, Project, Run
from tests.factories import sol_group

K62 = "062_kv_cache_update_with_rope_backward"


@pytest.fixture(params=[10, 1000], ids=["10-runs", "1000-runs"])
def two_gpus(request, db) -> int:
    half = request.param // 2
    sol_group(half)
    sol_group(half, gpu="NVIDIA H200")
    project = Project.objects.create(slug="tilegym", name="TH3CHARLie | TileGym")
    implementation = Implementation.objects.create(
        digest="sha256:" + "a" * 64, document="{}", project=project, submitter="TH3CHARLie | TileGym", revision="r1"
    )
    Run.objects.update(implementation=implementation)
    # As the catalogue import (data/sol-execbench/kernels/) sets them for kernel 10.
    Benchmark.objects.update(collection="L1", tags=["other", "L1"])
    assert Run.objects.count() == request.param
    return request.param


PAGES = [
    # sources, collections and tags, GPUs (filter options), count, page, leaders of the page
    ("/benchmarks/", 6),
    ("/benchmarks/?gpu=h200&source=sol-execbench&collection=L1&tag=other&sort=-runs&page=1", 6),
    # no benchmark has a rerun here: the empty page and its (absent) leaders cost nothing
    ("/benchmarks/?rerun=yes&sort=-latest", 4),
    # every GPU with its counts
    ("/gpus/", 1),
    ("/gpus/?sort=-runs", 1),
    # GPUs with counts (how many #1 runs too), sources (filter options), the page's #1 runs
    # from their groups in benchmark order, their rows …
    ("/gpus/b200/", 4),
    ("/gpus/b200/?sort=-benchmark&page=2", 4),
    # … with a source, the count of its groups with a #1 …
    ("/gpus/b200/?source=sol-execbench", 5),
    # … in another order: the count, the page
    ("/gpus/h200/?source=sol-execbench&sort=-latency&page=2", 4),
    # every source with its counts
    ("/sources/", 1),
    # count and page of projects
    ("/projects/", 2),
    ("/projects/?q=tile&sort=-runs", 2),
    # GPUs and sources (filter options), page: the sources' stored counts give the count
    ("/runs/", 3),
    ("/runs/?source=sol-execbench&sort=-latency", 3),
    # GPUs and sources (filter options), the GPU's environments, count, page
    ("/runs/?gpu=b200&source=sol-execbench&evidence=source_reported&status=passed&sort=-rank&page=3", 5),
    # benchmark, its comparison groups, their ranked and reference runs
    (f"/benchmarks/sol-execbench/{K62}/gpus/", 3),
]

DOWNLOADS = [
    # GPUs and sources (filter options), the GPU's environments, the rows in one chunked query
    ("/runs/?gpu=h200&format=csv", 4),
    ("/runs/?sort=-latency&format=jsonl", 3),
    # the group, the rows
    ("GROUP?show=all&sort=-latency&format=csv", 2),
    # GPUs with counts, sources, rows
    ("/gpus/b200/?format=csv", 3),
    # the filters' options (3), the benchmarks with their counts, their leaders
    ("/benchmarks/?format=jsonl", 5),
    ("/gpus/?format=csv", 1),
    ("/sources/?format=jsonl", 1),
    ("/projects/?format=csv", 1),
    # benchmark, groups, matrix runs, the rows of the download
    (f"/benchmarks/sol-execbench/{K62}/gpus/?format=csv", 4),
]


def test_it_pins_the_query_count_of_every_index_page(client, two_gpus, django_assert_num_queries):
    for url, queries in PAGES:
        assert client.get(url).status_code == 200, url
        caches["pages"].clear()  # the page's own queries, not the page cache's copy of it
        with django_assert_num_queries(queries):
            client.get(url)


def test_it_pins_the_query_count_of_every_download(client, two_gpus, django_assert_num_queries):
    group = Run.objects.select_related("group").first().group
    for url, queries in DOWNLOADS:
        url = url.replace("GROUP", group.get_absolute_url())
        with django_assert_num_queries(queries):
            response = client.get(url)
            body = b"".join(response.streaming_content).decode()
        assert response.status_code == 200, url
        assert response["Content-Disposition"].startswith("attachment; filename="), url
        assert body, url
