"""A ranking page's unfiltered views come from one compiled query per view (web.views
._ranking_view): for every sort, both directions, ranked-only and ?show=all, and every page, they
are the rows the ordinary queryset gives, in its order."""

from __future__ import annotations

import pytest

from runs import selectors
from runs.models import ComparisonGroup, Run
from tests.factories import sol_group
from web import tables, views

pytestmark = pytest.mark.django_db


def _ordinary(group: ComparisonGroup, show_all: bool, sort: str) -> list[str]:
    order = tables.order_for(sort, views._rank_order(group))
    rows = views._shown(selectors.ranking_rows(group, show_all=show_all).order_by(*order))
    return [run.public_id for run in rows]


def test_every_view_and_page_is_the_ordinary_querysets() -> None:
    sol_group(7)
    group = ComparisonGroup.objects.get()
    # A failed run and a quarantined one: in the show=all views only, greyed out.
    Run.objects.filter(group=group, rank=2).update(status="failed", rank=None)
    Run.objects.filter(group=group, rank=5).update(quarantined=True, rank=None)
    sorts = [name for name in tables.RUN_SORTS] + [f"-{name}" for name in tables.RUN_SORTS]
    for show_all in (False, True):
        for sort in sorts:
            expected = _ordinary(group, show_all, sort)
            view = views._ranking_view(group, show_all, sort)
            for start in range(0, 8, 3):
                found = view[start : start + 3]
                assert [run.public_id for run in found] == expected[start : start + 3], (show_all, sort, start)
                # What a row shows is loaded with it: the implementation and its project.
                assert all(hasattr(run, "eligible") for run in found)
    assert len(_ordinary(group, True, "rank")) == 7
    assert len(_ordinary(group, False, "rank")) == 5


def test_the_page_uses_the_compiled_view_only_when_unfiltered(client, django_assert_num_queries) -> None:
    sol_group(4)
    group = ComparisonGroup.objects.get()
    views._RANKING_VIEWS.clear()
    assert client.get(f"/groups/{group.key}/?evidence=source_reported").status_code == 200
    assert views._RANKING_VIEWS == {}
    body = client.get(f"/groups/{group.key}/?sort=-latency").content.decode()
    assert list(views._RANKING_VIEWS) == [(False, "-latency", group.ranking_metric, group.ranking_direction)]
    ids = _ordinary(group, False, "-latency")
    assert [body.index(f">{public_id}</a>") for public_id in ids] == sorted(
        body.index(f">{public_id}</a>") for public_id in ids
    )
