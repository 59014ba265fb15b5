"""The index pages, the cross-GPU view, "rank N of M" and the run tables' filters, sorts and
downloads, on the shipped data (data/: SOL-ExecBench boards and catalogue, KernelBench's H100
timings, KernelIndex's H200 reruns)."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest
from django.core.management import call_command

from runs import exports
from runs.models import Benchmark, ComparisonGroup, Run
from tests.factories import FIRST_BATCH_AND_RERUNS, import_bundles, sol_bundle
from tests.web.pages import visible_text
from web.templatetags.ranks import rank_of

K10 = "010_attention_value_projection_with_transpose"
K62 = "062_kv_cache_update_with_rope_backward"


@pytest.fixture
def data(db) -> None:
    # The first batch and KernelIndex's reruns: the whole corpus is imported only by its own tests.
    call_command("import", *[str(path) for path in FIRST_BATCH_AND_RERUNS], verbosity=0)


def text_of(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return visible_text(response.content.decode())


def download(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return b"".join(response.streaming_content).decode()


def test_every_page_has_the_site_navigation(client, data):
    body = client.get("/").content.decode()
    for href, name in (
        ("/benchmarks/", "Benchmarks"),
        ("/gpus/", "GPUs"),
        ("/sources/", "Sources"),
        ("/projects/", "Projects"),
        ("/api/v1/", "API"),
    ):
        assert f'<a href="{href}">{name}</a>' in body
    assert 'role="search"' in body


def test_the_benchmark_index_filters_sorts_and_names_each_best_result(client, data):
    everything = text_of(client, "/benchmarks/")
    assert f"Benchmarks ({Benchmark.objects.count()})" in everything
    # Filters: by GPU (KernelBench's timings are the only H100 runs), by rerun, by level, by tag.
    kernelbench_h100 = Benchmark.objects.filter(groups__hardware_product="NVIDIA H100 80GB HBM3").distinct().count()
    assert kernelbench_h100 == 250
    assert f"Benchmarks ({kernelbench_h100})" in text_of(client, "/benchmarks/?gpu=h100-80gb-hbm3")
    reruns = text_of(client, "/benchmarks/?rerun=yes")
    rerun = Benchmark.objects.filter(runs__evidence_level="kernelindex_rerun").distinct().count()
    assert rerun >= 2 and f"Benchmarks ({rerun})" in reruns and "Attention value projection with transpose" in reruns
    assert "Benchmarks (50)" in text_of(client, "/benchmarks/?collection=level3&source=kernelbench")
    tagged = text_of(client, "/benchmarks/?tag=other")
    assert "Benchmarks (1)" in tagged and K10 in tagged
    # The best result is the #1 of the largest group, with its GPU, rank and date.
    leader = Run.objects.get(benchmark__native_id=K10, group__family="sol_execbench_leaderboard", rank=1)
    assert f"{leader.sol_score:.4f} SOL on B200, 1 of 20, set {leader.observed_at:%Y-%m-%d}" in tagged
    # Sorting: most runs first.
    body = client.get("/benchmarks/?collection=L1&sort=-runs").content.decode()
    assert body.index(K10) < body.index(K62)
    body = client.get("/benchmarks/?collection=L1&sort=runs").content.decode()
    assert body.index(K62) < body.index(K10)
    # The CSV is exactly the view: the level3 filter, every page of it.
    rows = list(csv.DictReader(io.StringIO(download(client, "/benchmarks/?collection=level3&format=csv"))))
    assert len(rows) == 50 and {row["collection"] for row in rows} == {"level3"}
    assert all(row["bestGpu"] == "NVIDIA H100 80GB HBM3" for row in rows)


@pytest.mark.parametrize(
    "url",
    [
        "/benchmarks/?source=nope",
        "/benchmarks/?gpu=z9000",
        "/benchmarks/?tag=%3Cscript%3E",
        "/benchmarks/?rerun=maybe",
        "/runs/?evidence=rumour",
        "/runs/?status=great",
        "/gpus/b200/?source=nope",
    ],
)
def test_an_unknown_filter_value_is_a_clear_400(client, data, url):
    response = client.get(url)
    assert response.status_code == 400
    text = visible_text(response.content.decode())
    assert "Unknown" in text and "Known values:" in text
    assert "<script>" not in response.content.decode()


@pytest.mark.parametrize("facet", ["tag", "collection"])
def test_an_unknown_tag_or_collection_lists_the_known_ones_sorted(client, data, facet):
    page = client.get(f"/benchmarks/?{facet}=nope").content.decode()
    known = html.unescape(re.search(r"Known values: (.*?)\.</p>", page)[1]).split(", ")
    assert len(known) > 1 and known == sorted(known), known


@pytest.mark.parametrize(
    "url",
    [
        "/benchmarks/?sort=bogus&page=abc",
        "/runs/?sort=;drop&page=-3",
        "/gpus/?sort=x",
        "/projects/?sort=x&page=99999",
        "/gpus/b200/?page=0&sort=nothing",
        "/runs/?format=xls",
    ],
)
def test_an_unknown_sort_or_page_falls_back(client, data, url):
    assert client.get(url).status_code == 200


def test_gpus_and_a_gpu_page_with_its_best_runs(client, data):
    text = text_of(client, "/gpus/")
    assert "NVIDIA B200 sm_100" in text and "NVIDIA H200 sm_90" in text and "NVIDIA H100 80GB HBM3 sm_90" in text
    b200 = text_of(client, "/gpus/b200/")
    groups = ComparisonGroup.objects.filter(hardware_product="NVIDIA B200")
    leaders = Run.objects.filter(group__in=groups, rank=1)
    assert f"Best run of each comparison group ({leaders.count()})" in b200
    for run in leaders:
        assert run.public_id in b200
    # A group of one says so instead of "rank 1".
    assert "only run in its group" in b200
    # The count comes from the groups' stored figures unless an evidence level narrows the runs.
    for url, product, narrow in [
        ("/gpus/b200/?source=sol-execbench", "NVIDIA B200", {"source__slug": "sol-execbench"}),
        ("/gpus/h100-80gb-hbm3/?source=kernelbench", "NVIDIA H100 80GB HBM3", {"source__slug": "kernelbench"}),
        ("/gpus/h200/?evidence=kernelindex_rerun", "NVIDIA H200", {"evidence_level": "kernelindex_rerun"}),
    ]:
        expected = Run.objects.filter(group__hardware_product=product, rank=1, **narrow).count()
        assert expected > 0, url
        assert f"Best run of each comparison group ({expected})" in text_of(client, url), url
    assert client.get("/gpus/b-200/").status_code == 404


@pytest.mark.parametrize(
    ("gpu", "query"),
    [
        ("b200", ""),
        ("b200", "source=sol-execbench"),
        ("h100-80gb-hbm3", ""),  # 250 #1 runs: five pages
        ("h100-80gb-hbm3", "sort=-benchmark&source=kernelbench"),
        ("h200", "sort=-benchmark"),
        ("h200", "source=kernelindex"),
    ],
)
def test_a_gpu_page_in_benchmark_order_lists_the_runs_the_generic_order_does(client, data, gpu, query):
    """The default order reads the #1 runs from their groups (browse.GroupLeaders): the same
    runs, in the same order, page after page, as ordering the #1 runs themselves."""
    from django.db.models import F

    from runs import selectors
    from web.tables import gpu_products

    product = gpu_products()[gpu]
    params = dict(part.split("=") for part in query.split("&") if part)
    native_id = F("benchmark__native_id")
    expected = list(
        Run.objects.filter(group__hardware_product=product, rank=1, visibility="published")
        .filter(**({"source__slug": params["source"]} if "source" in params else {}))
        .order_by(native_id.desc(nulls_last=True) if "sort" in params else native_id.asc(nulls_last=True), "public_id")
        .values_list("public_id", flat=True)
    )
    shown: list[str] = []
    pages = -(-len(expected) // selectors.PAGE_SIZE) or 1
    for number in range(1, pages + 1):
        body = client.get(f"/gpus/{gpu}/?{query}&page={number}").content.decode()
        shown += re.findall(r'<th scope="row" class="id"><a href="/runs/([0-9a-f]{8})/">', body)
    assert expected and shown == expected
    assert f"Best run of each comparison group ({len(expected)})" in visible_text(body)


def test_sources_and_projects_index(client, data):
    text = text_of(client, "/sources/")
    assert "NVIDIA SOL-ExecBench" in text and "KernelBench 250" in text
    assert "Projects (" in text_of(client, "/projects/")


def test_the_cross_gpu_view_is_one_column_per_group_and_never_one_ranking(client, data):
    text = text_of(client, f"/benchmarks/sol-execbench/{K10}/gpus/")
    assert "Not one ranking." in text
    groups = ComparisonGroup.objects.filter(benchmark__native_id=K10)
    body = client.get(f"/benchmarks/sol-execbench/{K10}/gpus/").content.decode()
    for group in groups:
        assert f'href="{group.get_absolute_url()}"' in body
    # The torch.compile rerun on H200 is its own row; its cell links the run and the group's rank.
    rerun = Run.objects.filter(benchmark__native_id=K10, group__family="kernelindex_rerun", rank=1).first()
    assert f'href="{rerun.get_absolute_url()}"' in body and rank_of(rerun) in text
    assert rank_of(rerun) == (
        "only run in its group" if rerun.group.ranked_count == 1 else f"1 of {rerun.group.ranked_count}"
    )
    # KernelBench: the eager baseline on H100, the only run in its group.
    kb = text_of(client, "/benchmarks/kernelbench/level1/100_HingeLoss/gpus/")
    assert "eager PyTorch baseline" in kb and "only run in its group" in kb
    # Its download holds exactly the matrix's runs.
    rows = list(csv.DictReader(io.StringIO(download(client, f"/benchmarks/sol-execbench/{K10}/gpus/?format=csv"))))
    ranked_or_reference = Run.objects.filter(benchmark__native_id=K10, visibility="published").exclude(
        rank__isnull=True, is_reference=False
    )
    assert sorted(row["id"] for row in rows) == sorted(ranked_or_reference.values_list("public_id", flat=True))


def test_the_cross_gpu_view_charts_each_implementation_across_its_groups(client, data):
    """One SVG per implementation, one row per comparison group it has a run in, with a text
    alternative; a latency and a SOL-score group are never on one axis."""
    body = client.get(f"/benchmarks/sol-execbench/{K10}/gpus/").content.decode()
    assert "Each implementation across GPUs" in body
    charts = re.findall(r"<svg\b.*?</svg>", body, flags=re.S)
    assert charts and all("<title" in svg and "<desc" in svg for svg in charts)
    assert "not one ranking" in body.lower()
    rerun = Run.objects.filter(benchmark__native_id=K10, group__family="kernelindex_rerun", rank=1).first()
    assert f"{rerun.public_id}, rank 1" in body  # the mark's note names the run and its own group's rank


def test_a_run_table_downloads_exactly_its_view_as_csv_and_jsonl(client, data):
    url = "/runs/?gpu=b200&source=sol-execbench&sort=-score"
    page = client.get(url).content.decode()
    csv_text = download(client, url + "&format=csv")
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    expected = Run.objects.filter(
        visibility="published", group__hardware_product="NVIDIA B200", source__slug="sol-execbench"
    )
    assert len(rows) == expected.count()
    assert list(rows[0]) == [column for column, _ in exports.CSV_COLUMNS]
    scores = [float(row["solScore"]) for row in rows if row["solScore"]]
    assert scores == sorted(scores, reverse=True)
    # The page shows the same first rows in the same order.
    assert page.index(rows[0]["id"]) < page.index(rows[1]["id"])
    lines = download(client, url + "&format=jsonl").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [row["id"] for row in rows]
    assert 'href="?gpu=b200&amp;source=sol-execbench&amp;sort=-score&amp;format=csv"' in page


def test_the_runs_index_counts_a_gpu_and_a_source_exactly_from_the_stored_figures(client, data):
    from web.tables import gpu_slug

    products = set(ComparisonGroup.objects.values_list("hardware_product", flat=True))
    assert len(products) > 1
    for product in products:
        for source in ("", "sol-execbench", "kernelbench"):
            runs = Run.objects.filter(visibility="published", group__hardware_product=product)
            url = f"/runs/?gpu={gpu_slug(product)}"
            if source:
                runs, url = runs.filter(source__slug=source), f"{url}&source={source}"
            page = client.get(url).content.decode()
            assert re.search(rf"<caption>Runs \({runs.count()}\)</caption>", page), url


def test_the_gpu_filter_offers_every_product_of_the_groups_once_in_order(data):
    from runs.selectors import gpu_products

    products = ComparisonGroup.objects.order_by("hardware_product").values_list("hardware_product", flat=True)
    assert len(products.distinct()) > 1
    assert gpu_products() == list(products.distinct())  # the index walk gives SELECT DISTINCT's answer


def test_csv_cells_are_formula_safe(client, db):
    import_bundles(
        [sol_bundle(submission_id=424242, username='=HYPERLINK("http://x")', sol_score=0.5, latency_ms=0.03)]
    )
    rows = list(csv.reader(io.StringIO(download(client, "/runs/?format=csv"))))
    assert rows[1][rows[0].index("submitter")] == '\'=HYPERLINK("http://x")'
    for start in ("+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert exports.csv_cell(start) == "'" + start


def test_rank_n_of_m_on_the_run_page_and_the_ranking(client, data):
    leader = Run.objects.get(benchmark__native_id=K10, group__family="sol_execbench_leaderboard", rank=3)
    assert leader.group.ranked_count == 20
    assert "Rank 3 of 20 in its comparison group" in text_of(client, leader.get_absolute_url())
    alone = Run.objects.get(benchmark__native_id="level1/100_HingeLoss")
    assert "The only ranked run in its comparison group" in text_of(client, alone.get_absolute_url())
    ranking = text_of(client, leader.group.get_absolute_url() + "?evidence=source_reported")
    assert "3 of 20" in ranking
