"""Ranking, benchmark, search and browse pages on the real SOL-ExecBench board and the
reference bundle (data/)."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.management import call_command

from attestations.moderation import run_hide
from runs.models import Benchmark, ComparisonGroup, Run, Source
from runs.ranking import RankingRule
from tests.factories import REFERENCE_BUNDLE, REPO
from tests.web.pages import visible_text

BOARD = REPO / "data" / "sol-execbench" / "leaderboards" / "kernel-10-B200-v1.1.json"
KERNEL_10 = REPO / "data" / "sol-execbench" / "kernels" / "kernel-10.json"


@pytest.fixture
def board(db) -> ComparisonGroup:
    call_command("import", str(BOARD), str(KERNEL_10), str(REFERENCE_BUNDLE), verbosity=0)
    return ComparisonGroup.objects.get(benchmark__native_id="010_attention_value_projection_with_transpose")


def published(board: ComparisonGroup) -> dict:
    return json.loads(BOARD.read_text())["response"]["data"]


def row_cells(body: str) -> list[dict[str, str]]:
    """The ranking table's rows, each cell by its column's header (the columns' order is the
    page's to choose: on a phone the rank, run and primary measurement come first)."""
    table = body.index('class="ranking"')
    thead = body[body.index("<thead>", table) : body.index("</thead>", table)]
    header = [visible_text(cell) for cell in re.findall(r"<th[^>]*>(.*?)</th>", thead, re.S)]
    tbody = body[body.index("<tbody>", table) : body.index("</tbody>", table)]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", tbody, re.S)
    cells = [[visible_text(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)] for row in rows]
    return [dict(zip(header, row, strict=True)) for row in cells]


def test_the_ranking_page_shows_the_board_as_published(client, board):
    body = client.get(f"/groups/{board.key}/").content.decode()
    text = visible_text(body)
    rows = row_cells(body)
    expected = published(board)["rankings"]
    # Every published row, in the published order, reference rows in place and unranked.
    assert [r["submitter"] for r in rows] == [e["username"] for e in expected]
    # "Rank N of M": M is the number of ranked rows on the published board (20 of its 23).
    ranked = sum(1 for e in expected if e.get("rank") is not None)
    assert ranked == 20
    assert [r["rank"] for r in rows] == [
        "reference" if e.get("is_reference") else f"{e['rank']} of {ranked}" for e in expected
    ]
    assert body.count('<tr class="reference">') == 3
    rule = RankingRule(board.ranking_metric, board.ranking_direction, board.best_per)
    assert rule.description in text
    assert (
        "A run is eligible to rank when the source marked it passed, it is published (neither hidden nor "
        "retracted), it is not quarantined, it is not a reference row." in text
    )
    assert '<svg class="chart chart-wide"' in body and "SOL score by position in the ranking" in body
    assert "<caption>" in body and 'scope="col"' in body and 'scope="row"' in body
    assert body.count("<h1") == 1
    assert f'href="/api/v1/groups/{board.key}/"' in body
    assert "SOL 0.5349" not in text and "0.5349" in text and "1.09×" in text  # formatted by the filters


def test_the_ranking_sorts_by_link_and_shows_ineligible_runs_greyed_out(client, board):
    first = Run.objects.get(group=board, rank=1)
    Run.objects.filter(pk=first.pk).update(quarantined=True, public_reason="Under review.")
    call_command("import", str(BOARD), verbosity=0)  # any import recomputes the ranks of the group
    body = client.get(f"/groups/{board.key}/").content.decode()
    assert first.submitter not in [r["submitter"] for r in row_cells(body)]
    assert 'href="?show=all"' in body
    everything = client.get(f"/groups/{board.key}/?show=all").content.decode()
    greyed = [r for r in row_cells(everything) if r["submitter"] == first.submitter]
    assert greyed and "quarantined" in greyed[0]["rank"]
    assert '<tr class="ineligible">' in everything
    by_latency = row_cells(client.get(f"/groups/{board.key}/?sort=latency").content.decode())
    latencies = [float(r["latency"].split()[0]) for r in by_latency if r["latency"] != "—"]
    assert latencies == sorted(latencies)
    reversed_ = client.get(f"/groups/{board.key}/?sort=latency").content.decode()
    assert 'href="?sort=-latency"' in reversed_
    assert client.get(f"/groups/{board.key}/?sort=nonsense&page=999").status_code == 200


def test_the_benchmark_page_has_every_group_and_its_top_runs(client, board):
    benchmark = board.benchmark
    body = client.get(benchmark.get_absolute_url()).content.decode()
    text = visible_text(body)
    assert f"All results for {benchmark.title}" in text
    assert "NVIDIA B200 · SOL-ExecBench evaluation stack v1.1" in text
    assert "RIAC as well" in text and f'href="{board.get_absolute_url()}"' in body
    assert "Cases of the benchmark's workload" in text  # the kernel's 16 cases with SOL/baseline times
    assert "/api/v1/benchmarks/?source=sol-execbench" in body


def test_search_finds_benchmarks_submitters_projects_and_gpus(client, board):
    text = visible_text(client.get("/search/?q=kv+cache").content.decode())
    assert "KV cache update with RoPE backward" in text
    text = visible_text(client.get("/search/?q=attention").content.decode())
    assert "Attention value projection with transpose" in text
    text = visible_text(client.get("/search/?q=RIAC").content.decode())
    assert "RIAC as well" in text
    text = visible_text(client.get("/search/?q=b200").content.decode())
    assert "NVIDIA B200 (sm_100)" in text
    nothing = visible_text(client.get("/search/?q=%3Cscript%3Ezzz").content.decode())
    assert "Nothing matches “<script>zzz”." in nothing
    runs = visible_text(client.get("/search/?submitter=RIAC+as+well").content.decode())
    assert "runs by RIAC as well" in runs and "Attention value projection" in runs


def test_home_and_source_pages_list_sources_benchmarks_and_latest_runs(client, board):
    text = visible_text(client.get("/").content.decode())
    assert "NVIDIA SOL-ExecBench" in text and "Most-run benchmarks" in text and "Latest runs" in text
    assert "Attention value projection with transpose" in text
    source = Source.objects.get(slug="sol-execbench")
    body = client.get(source.get_absolute_url()).content.decode()
    assert "/api/v1/runs/?source=sol-execbench" in body
    assert Benchmark.objects.get(native_id="010_attention_value_projection_with_transpose").title in body


def test_environment_page_lists_its_runs(client, board, django_user_model):
    run = Run.objects.get(group=board, rank=1)
    body = client.get(run.environment.get_absolute_url()).content.decode()
    assert "NVIDIA B200 (sm_100)" in visible_text(body) and run.public_id in body
    # The count is the environment's stored figure, and equals the runs it holds; a filter counts.
    published = Run.objects.visible().filter(environment=run.environment)
    assert f"Runs in this environment ({published.count()})" in visible_text(body)
    hidden = published.exclude(pk=run.pk).first()
    moderator = django_user_model.objects.create_user("mod", password="unused-password-7", is_staff=True)
    run_hide(hidden, moderator, "Published by mistake: a test of the stored count.")
    body = client.get(run.environment.get_absolute_url()).content.decode()
    assert f"Runs in this environment ({published.count()})" in visible_text(body)
    body = client.get(run.environment.get_absolute_url() + "?evidence=source_reported").content.decode()
    shown = published.filter(evidence_level="source_reported").count()
    assert f"Runs in this environment ({shown})" in visible_text(body)


def test_every_json_twin_link_answers_json(client, board):
    run = Run.objects.get(group=board, rank=1)
    pages = [
        "/",
        "/sources/sol-execbench/",
        board.benchmark.get_absolute_url(),
        board.get_absolute_url(),
        run.environment.get_absolute_url(),
        f"/search/?submitter={run.submitter.replace(' ', '+')}",
    ]
    twins = set()
    for url in pages:
        body = client.get(url).content.decode()
        found = {html.unescape(href) for href in re.findall(r'href="(/api/v1/[^"]*)"', body)}
        assert found, f"{url} links no JSON twin"
        twins |= found
    for twin in sorted(twins):
        response = client.get(twin)
        assert response.status_code == 200, twin
        assert response["Content-Type"].startswith("application/json"), twin


@pytest.mark.parametrize(
    "url",
    [
        "/search/?q=%00",
        "/search/?submitter=%00x",
        "/search/?q=" + "a" * 5000,
        "/search/?q=%25_%5C",
        "/groups/{key}/?page=abc&sort=%00",
        "/groups/{key}/?page=-1&show=nonsense",
        "/sources/sol-execbench/?page=99999",
    ],
)
def test_bad_input_never_breaks_a_page(client, board, url):
    assert client.get(url.format(key=board.key)).status_code == 200


@pytest.mark.django_db
def test_long_lists_count_only_up_to_the_cap_and_say_so(client, monkeypatch):
    """A list never counts past runs.selectors.COUNT_CAP rows (a full COUNT(*) over a million
    runs cost more than a page may): its caption says "N+", its pager that more exist."""
    from runs import selectors
    from tests.factories import sol_group

    sol_group(12)
    monkeypatch.setattr(selectors.CappedPaginator, "cap", 5)
    text = visible_text(client.get("/runs/?evidence=source_reported").content.decode())
    assert "(5+)" in text
    assert "page 1 of the first" in text and "rows shown of more; filter to narrow" in text
    # Every run, or one source's: the stored counts give the caption exactly, at no query.
    text = visible_text(client.get("/runs/").content.decode())
    assert f"Runs ({Run.objects.count()})" in text and "rows shown of more" in text
    # Below the cap a list gives its exact count and plain pager.
    monkeypatch.setattr(selectors.CappedPaginator, "cap", 100)
    text = visible_text(client.get("/runs/?page=1").content.decode())  # another URL: not the cached page
    assert f"({Run.objects.count()})" in text and "of more" not in text
