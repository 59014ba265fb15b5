"""Read endpoints over the real shipped data: golden JSON, filters, ranking, pagination, ETags."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from attestations.moderation import run_quarantine
from runs.models import ComparisonGroup, Run, Source, Visibility
from tests.api.conftest import SITE_URL, golden_path

pytestmark = pytest.mark.django_db

BOARD_10 = {"benchmark": "10", "gpu": "B200", "harnessVersion": "v1.1", "family": "sol_execbench_leaderboard"}


def assert_golden(name: str, data: Any) -> None:
    """Compare with tests/api/golden/<name>; UPDATE_GOLDEN=1 rewrites the file instead."""
    path = golden_path(name)
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from the golden file (UPDATE_GOLDEN=1)"


def reference_run() -> Run:
    # The reference bundle's run: SOL-ExecBench submission 27772 on kernel 62.
    return Run.objects.get(external_id="27772", benchmark__native_id="062_kv_cache_update_with_rope_backward")


def board_10() -> ComparisonGroup:
    return ComparisonGroup.objects.get(
        benchmark__native_id="010_attention_value_projection_with_transpose",
        family="sol_execbench_leaderboard",
        hardware_product="NVIDIA B200",
        harness_version="v1.1",
    )


def test_it_pins_the_reference_run(client: Any, shipped_data: None) -> None:
    run = reference_run()
    response = client.get(f"/api/v1/runs/{run.public_id}/")
    assert response.status_code == 200
    data = response.json()
    # The reference page's facts (data/reference/run-page-01a0352b.txt).
    assert data["timing"] == {"latencyNs": {"mean": 18580}, "primaryStatistic": "mean"}
    assert data["metrics"]["sol_score"] == 0.988198
    assert data["evidenceLevel"] == "source_reported"
    assert data["hardware"]["product"] == "NVIDIA B200"
    assert data["hardware"]["architecture"] == "sm_100"
    assert data["url"] == f"{SITE_URL}/runs/{run.public_id}/"
    assert data["digest"] == run.digest
    assert data["protocolDigest"] == "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
    # The page's identity block: "implementation TH3CHARLie | TileGym", "revision submission-27772",
    # "external id submission/27772".
    assert data["display"] == {
        "implementation": "TH3CHARLie | TileGym",
        "project": "TH3CHARLie | TileGym",
        "revision": "submission-27772",
        "externalId": "submission/27772",
    }
    assert_golden("run_reference.json", data)


def test_it_pins_the_kernel_10_ranking(client: Any, shipped_data: None) -> None:
    group = board_10()
    response = client.get(f"/api/v1/groups/{group.key}/")
    assert response.status_code == 200
    data = response.json()
    rows = data["rows"]
    references = [row for row in rows if row["isReference"]]
    assert len(references) == 3 and all(row["rank"] is None for row in references)
    ranked = [row for row in rows if not row["isReference"]]
    # The computed ranks are the ranks the source published, in order.
    assert [row["rank"] for row in ranked] == [row["sourceRank"] for row in ranked]
    assert [row["rank"] for row in ranked] == list(range(1, len(ranked) + 1))
    assert data["ranking"]["metric"] == "sol_score"
    assert_golden("group_kernel_10_b200_v1.1.json", data)


def test_it_pins_a_list_page(client: Any, shipped_data: None) -> None:
    response = client.get("/api/v1/runs/", {**BOARD_10, "ordering": "rank", "limit": 5})
    assert response.status_code == 200
    data = response.json()
    assert [row["rank"] for row in data["results"]] == [1, 2, 3, 4, 5]
    assert data["previous"] is None and data["next"]
    assert_golden("runs_list_kernel_10_by_rank.json", data)


def test_the_group_ranking_and_the_run_list_agree(client: Any, shipped_data: None) -> None:
    group = board_10()
    ranking = client.get(f"/api/v1/groups/{group.key}/").json()["rows"]
    listed = client.get("/api/v1/runs/", {"comparisonKey": group.key, "ranked": "true", "ordering": "rank"}).json()
    assert [r["id"] for r in ranking if r["rank"]] == [r["id"] for r in listed["results"]]


@pytest.mark.parametrize(
    ("params", "check"),
    [
        ({"source": "kernelbench"}, lambda r: r["source"] == "kernelbench"),
        (
            {"benchmark": "062_kv_cache_update_with_rope_backward"},
            lambda r: r["benchmark"]["nativeId"].startswith("062"),
        ),
        (
            {"benchmark": "62", "source": "sol-execbench"},
            lambda r: r["source"] == "sol-execbench" and r["benchmark"]["nativeId"].startswith("062"),
        ),
        (
            # A benchmark's runs from every source: the SOL board and KernelIndex's reruns of it.
            {"benchmark": "010_attention_value_projection_with_transpose", "benchmarkSource": "sol-execbench"},
            lambda r: r["benchmark"]["nativeId"] == "010_attention_value_projection_with_transpose",
        ),
        ({"gpu": "B200"}, lambda r: r["hardware"]["product"] == "NVIDIA B200"),
        ({"gpu": "NVIDIA B200"}, lambda r: r["hardware"]["product"] == "NVIDIA B200"),
        ({"architecture": "sm_90"}, lambda r: r["hardware"]["architecture"] == "sm_90"),
        ({"harnessVersion": "v1.1"}, lambda r: r["harness"]["version"] == "v1.1"),
        ({"status": "passed"}, lambda r: r["status"] == "passed"),
        ({"evidenceLevel": "source_reported"}, lambda r: r["evidenceLevel"] == "source_reported"),
        ({"project": "th3charlie-tilegym"}, lambda r: r["project"] and r["project"]["name"] == "TH3CHARLie | TileGym"),
        ({"project": "Qin Liu @ UCD"}, lambda r: r["project"] and r["project"]["name"] == "Qin Liu @ UCD"),
        ({"submitter": "TH3CHARLie | TileGym"}, lambda r: r["submitter"] == "TH3CHARLie | TileGym"),
        (
            {"observedAfter": "2026-07-01", "observedBefore": "2026-08-01T00:00:00Z"},
            lambda r: r["observedAt"] is not None and "2026-07-01" <= r["observedAt"] < "2026-08-01",
        ),
    ],
)
def test_each_filter_narrows_the_list(client: Any, shipped_data: None, params: dict, check: Any) -> None:
    everything = client.get("/api/v1/runs/", {"limit": 500}).json()["results"]
    response = client.get("/api/v1/runs/", {**params, "limit": 500})
    assert response.status_code == 200, response.json()
    results = response.json()["results"]
    assert results, f"no run matches {params}"
    assert all(check(row) for row in results)
    assert len(results) == len([row for row in everything if check(row)])


@pytest.mark.parametrize("ordering", ["-observedAt", "observedAt", "rank", "latency", "-latency"])
def test_cursor_pages_walk_every_run_once_both_ways(client: Any, shipped_data: None, ordering: str) -> None:
    total = Run.objects.visible().count()
    seen: list[str] = []
    pages = []
    url = f"/api/v1/runs/?ordering={ordering}&limit=37"
    while url:
        page = client.get(url).json()
        pages.append(page)
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    assert len(seen) == total == len(set(seen))
    # Walking back from the last page gives the same pages in reverse.
    back: list[str] = []
    url = pages[-1]["previous"]
    while url:
        page = client.get(url).json()
        back = [row["id"] for row in page["results"]] + back
        url = page["previous"]
    assert back == seen[: len(back)] and len(back) == total - len(pages[-1]["results"])
    if ordering == "latency":
        latencies = [client.get(f"/api/v1/runs/{i}/").json()["latencyNs"] for i in seen[:5]]
        assert latencies == sorted(latencies)


@pytest.mark.parametrize("ordering", ["-observedAt", "observedAt", "rank", "latency", "-latency"])
def test_an_unfiltered_first_page_equals_the_filtered_way_to_it(client: Any, shipped_data: None, ordering: str) -> None:
    """The first page of the whole list runs a query compiled once (api.pagination); a filter
    given no value ("gpu=") takes the ordinary way to the same rows and the same next page."""
    for limit in (1, 37, 500):
        compiled = client.get(f"/api/v1/runs/?ordering={ordering}&limit={limit}")
        ordinary = client.get(f"/api/v1/runs/?ordering={ordering}&limit={limit}&gpu=")
        assert compiled.status_code == ordinary.status_code == 200
        assert compiled.json()["results"] == ordinary.json()["results"] and compiled.json()["results"]
        assert compiled.json()["previous"] is None is ordinary.json()["previous"]
        next_page = compiled.json()["next"]
        assert (next_page is None) == (limit == 500)
        if next_page:
            assert next_page.replace("&limit", "&gpu=&limit") == ordinary.json()["next"]
            assert client.get(next_page).json()["results"] == client.get(ordinary.json()["next"]).json()["results"]


def test_the_page_size_is_capped(client: Any, shipped_data: None) -> None:
    assert len(client.get("/api/v1/runs/?limit=500").json()["results"]) == Run.objects.visible().count() > 250
    response = client.get("/api/v1/runs/?limit=501")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "limit"


def test_detail_endpoints_answer_if_none_match_with_304(client: Any, shipped_data: None) -> None:
    run = reference_run()
    group = board_10()
    for url in [
        f"/api/v1/runs/{run.public_id}/",
        f"/api/v1/groups/{group.key}/",
        "/api/v1/sources/sol-execbench/",
        f"/api/v1/protocols/{run.protocol.digest}/",
        f"/api/v1/environments/{run.environment.digest}/",
    ]:
        first = client.get(url)
        assert first.status_code == 200 and first["ETag"]
        again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
        assert again.status_code == 304 and again["ETag"] == first["ETag"] and again.content == b""
        assert client.get(url, HTTP_IF_NONE_MATCH='"stale"').status_code == 200


def test_the_etag_changes_when_the_run_changes(client: Any, shipped_data: None, staff: Any) -> None:
    """The ETag is the site's data version, which every write through the site bumps (here a
    moderator's quarantine); the anonymous copy kept in the page cache is not served after it."""
    run = reference_run()
    first = client.get(f"/api/v1/runs/{run.public_id}/")
    assert first["X-Page-Cache"] == "miss" and first.json()["quarantined"] is False
    assert client.get(f"/api/v1/runs/{run.public_id}/")["X-Page-Cache"] == "hit"
    run_quarantine(run, staff, "Timings disagree with the rerun.")
    second = client.get(f"/api/v1/runs/{run.public_id}/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert second.status_code == 200 and second["ETag"] != first["ETag"]
    assert second["X-Page-Cache"] == "miss" and second.json()["quarantined"] is True


def test_a_retracted_run_keeps_its_permalink_as_a_tombstone(client: Any, shipped_data: None) -> None:
    run = reference_run()
    Run.objects.filter(pk=run.pk).update(visibility=Visibility.RETRACTED, public_reason="Duplicate of another run.")
    response = client.get(f"/api/v1/runs/{run.public_id}/")
    assert response.status_code == 410
    assert response.json() == {
        "id": run.public_id,
        "url": f"{SITE_URL}/runs/{run.public_id}/",
        "digest": run.digest,
        "visibility": "retracted",
        "publicReason": "Duplicate of another run.",
    }
    listed = client.get("/api/v1/runs/", {"limit": 500}).json()["results"]
    assert run.public_id not in {row["id"] for row in listed}


def test_catalogue_endpoints(client: Any, shipped_data: None) -> None:
    sources = client.get("/api/v1/sources/").json()["results"]
    assert {s["slug"]: s["runCount"] for s in sources} == {
        s.slug: s.runs.filter(visibility="published").count() for s in Source.objects.all()
    }
    benchmarks = client.get("/api/v1/benchmarks/", {"nativeId": "10", "source": "sol-execbench"}).json()["results"]
    assert [b["nativeId"] for b in benchmarks] == ["010_attention_value_projection_with_transpose"]
    assert board_10().key in {g["key"] for g in benchmarks[0]["groups"]}
    groups = client.get("/api/v1/groups/", BOARD_10).json()["results"]
    assert [g["key"] for g in groups] == [board_10().key]
    assert groups[0]["runCount"] == board_10().runs.count()
    environments = client.get("/api/v1/environments/", {"gpu": "H100 80GB HBM3"}).json()["results"]
    assert environments and all(e["architecture"] == "sm_90" for e in environments)
    protocols = client.get("/api/v1/protocols/", {"family": "sol_execbench_leaderboard"}).json()["results"]
    assert protocols and all(p["family"] == "sol_execbench_leaderboard" for p in protocols)
    workloads = client.get("/api/v1/workloads/", {"benchmark": "62"}).json()["results"]
    assert workloads and all(w["benchmark"]["nativeId"].startswith("062") for w in workloads)
    detail = client.get(f"/api/v1/workloads/{workloads[0]['digest']}/").json()
    assert detail["manifest"]["kind"] == "Workload"
    implementations = client.get("/api/v1/implementations/", {"project": "TH3CHARLie | TileGym"}).json()["results"]
    assert implementations and all(i["project"]["name"] == "TH3CHARLie | TileGym" for i in implementations)


def test_cors_is_open_for_reads_only(client: Any, shipped_data: None) -> None:
    response = client.get("/api/v1/runs/?limit=1", HTTP_ORIGIN="https://notebook.example")
    assert response["Access-Control-Allow-Origin"] == "*"
    preflight = client.options(
        "/api/v1/runs/", HTTP_ORIGIN="https://notebook.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET"
    )
    assert preflight.status_code == 204 and "GET" in preflight["Access-Control-Allow-Methods"]
    post_preflight = client.options(
        "/api/v1/manifests/", HTTP_ORIGIN="https://evil.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"
    )
    assert "Access-Control-Allow-Origin" not in post_preflight


def test_a_benchmark_lists_its_source_runs_and_kernelindex_reruns(client: Any, shipped_data: None) -> None:
    """The benchmark page's "runs as JSON" link: by the benchmark's source, not the run's."""
    params = {"benchmark": "010_attention_value_projection_with_transpose", "benchmarkSource": "sol-execbench"}
    rows = client.get("/api/v1/runs/", {**params, "limit": 500}).json()["results"]
    assert {row["evidenceLevel"] for row in rows} == {"source_reported", "kernelindex_rerun"}
    assert {row["source"] for row in rows} >= {"sol-execbench", "kernelindex"}


def test_run_items_equal_the_declared_fields_field_by_field(shipped_data: None) -> None:
    """RunSerializer builds its item in one function (api.items.run_item) for speed; for every
    shipped run it must be exactly what DRF's field-by-field pass over the declared fields gives,
    key order included (the list and the detail serializer)."""
    from rest_framework import serializers as drf

    from api.items import RUN_ITEM_VALUES, run_item
    from api.serializers import RunDetailSerializer, RunSerializer

    runs = list(Run.objects.for_listing().defer(None).order_by("pk"))
    # What the lists serialize: no document, its timing and metrics read by the database.
    listed = {run.pk: run for run in Run.objects.for_listing()}
    assert len(runs) > 250
    for run in runs:
        for cls in (RunSerializer, RunDetailSerializer):
            fast = cls(run).data
            declared = drf.Serializer.to_representation(cls(run), run)
            assert list(fast.items()) == list(declared.items()), (cls.__name__, run.public_id)
        assert "document" not in listed[run.pk].__dict__
        assert RunSerializer(listed[run.pk]).data == RunSerializer(run).data, run.public_id
    # What the lists read: the values of RUN_ITEM_VALUES, one dictionary a run, no instances.
    rows = {row["public_id"]: row for row in Run.objects.values(*RUN_ITEM_VALUES)}
    for run in runs:
        assert list(run_item(rows[run.public_id]).items()) == list(RunSerializer(run).data.items()), run.public_id


def test_group_items_equal_the_declared_fields_field_by_field(shipped_data: None) -> None:
    """GroupSerializer builds its item in one function (api.items.group_item); for every shipped
    group it must be what DRF's field-by-field pass over the declared fields gives, key order
    included (the list's item with its run count, and the ranking with its rows)."""
    from django.db.models import F
    from rest_framework import serializers as drf

    from api.items import GROUP_LIST_VALUES, group_items
    from api.serializers import GroupListSerializer, GroupRankingSerializer
    from runs import selectors

    groups = list(
        ComparisonGroup.objects.select_related("source", "benchmark", "benchmark__source")
        .annotate(run_count=F("published_runs"))
        .order_by("pk")
    )
    assert len(groups) > 50
    for group in groups:
        fast = GroupListSerializer(group).data
        declared = drf.Serializer.to_representation(GroupListSerializer(group), group)
        assert list(fast.items()) == list(declared.items()), group.key
    # What the list reads: the values of GROUP_LIST_VALUES, one dictionary a group, no instances.
    rows = ComparisonGroup.objects.annotate(run_count=F("published_runs")).order_by("pk").values(*GROUP_LIST_VALUES)
    listed = group_items(list(rows))
    assert len(listed) == len(groups)
    for item, group in zip(listed, groups, strict=True):
        assert list(item.items()) == list(GroupListSerializer(group).data.items()), group.key
    for group in groups[:: len(groups) // 10]:
        group.ranking_rows = selectors.attach_group(list(selectors.ranking_rows(group)), group)
        fast = GroupRankingSerializer(group).data
        declared = drf.Serializer.to_representation(GroupRankingSerializer(group), group)
        assert list(fast.items()) == list(declared.items()), group.key
