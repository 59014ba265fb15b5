"""``runs.bulk.update_rows`` writes what ``bulk_update`` would, NULLs and datetimes included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runs.bulk import update_rows
from runs.models import ComparisonGroup
from tests.factories import sol_group


@pytest.mark.django_db
def test_update_rows_writes_each_object_its_own_values() -> None:
    sol_group(2)
    sol_group(1, gpu="NVIDIA H200")
    groups = list(ComparisonGroup.objects.order_by("pk"))
    assert len(groups) == 2
    moment = datetime(2026, 12, 3, 7, 0, 1, 250000, tzinfo=UTC)
    groups[0].published_runs, groups[0].last_observed_at, groups[0].ranked_count = 41, None, 7
    groups[1].published_runs, groups[1].last_observed_at, groups[1].ranked_count = 0, moment, 0
    update_rows(ComparisonGroup, groups, ["published_runs", "last_observed_at", "ranked_count"])
    stored = list(
        ComparisonGroup.objects.order_by("pk").values_list("published_runs", "last_observed_at", "ranked_count")
    )
    assert stored == [(41, None, 7), (0, moment, 0)]
    update_rows(ComparisonGroup, [], ["published_runs"])  # nothing to write: no query, no error
