"""kernelindex.lookups.AnyOf (``field__any=[…]``) finds what ``__in`` finds, on both databases."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.models import ComparisonGroup, Run
from tests.factories import sol_group


@pytest.fixture
def runs(db: None) -> list[Run]:
    sol_group(6)
    sol_group(4, kernel="010_attention_value_projection_with_transpose")
    return list(Run.objects.order_by("pk"))


def _same(**lookup: object) -> list[int]:
    """The primary keys ``name__any`` finds, after checking ``name__in`` finds the same."""
    ((name, values),) = lookup.items()
    found = sorted(Run.objects.filter(**{f"{name}__any": values}).values_list("pk", flat=True))
    assert found == sorted(Run.objects.filter(**{f"{name}__in": values}).values_list("pk", flat=True)), name
    return found


@pytest.mark.django_db
def test_any_finds_what_in_finds(runs: list[Run]) -> None:
    some = runs[1:7:2]
    assert _same(identity=[run.identity for run in some]) == [run.pk for run in some]  # text
    assert _same(public_id=[run.public_id for run in some] + ["nothing"]) == [run.pk for run in some]  # varchar
    assert _same(pk=[run.pk for run in some]) == [run.pk for run in some]  # the primary key
    assert len(_same(group_id=[runs[0].group_id])) == 6  # a foreign key's column
    assert len(_same(group=[runs[-1].group_id])) == 4  # the foreign key itself
    assert len(_same(benchmark__native_id={"010_attention_value_projection_with_transpose"})) == 4  # a join
    assert _same(rank=[1, 2, None]) == _same(rank=[1, 2])  # NULL equals nothing, as with IN
    assert _same(identity=[]) == _same(identity=[None]) == []
    groups = ComparisonGroup.objects.filter(benchmark__native_id__startswith="010_").values("pk")
    assert len(_same(group_id=groups)) == 4  # a subquery stays a subquery


# Texts that PostgreSQL's array literal (what AnyOf sends texts as) would misread unquoted or
# unescaped: quotes, backslashes, braces, commas, spaces at either end, the word NULL, nothing.
AWKWARD = ['say "hi"', "back\\slash\\", '\\"', "{a,b}", " padded ", "NULL", "", "é ✓ 𝄞", "it's", "a\nb"]


@pytest.mark.django_db
def test_any_finds_awkward_texts(runs: list[Run]) -> None:
    for run, submitter in zip(runs, AWKWARD, strict=True):
        run.submitter = submitter
        run.save(update_fields=["submitter"])
    for index, submitter in enumerate(AWKWARD):
        assert _same(submitter=[submitter]) == [runs[index].pk], repr(submitter)
    assert len(_same(submitter=AWKWARD)) == len(AWKWARD)
    assert _same(submitter=["hi", "say", "a", "b", "{a", "padded", "back", "slash"]) == []


@pytest.mark.django_db
def test_on_postgresql_the_values_are_one_array_parameter(runs: list[Run]) -> None:
    ids = [run.public_id for run in runs]
    with CaptureQueriesContext(connection) as captured:
        assert Run.objects.filter(public_id__any=ids).count() == len(runs)
    (sql,) = [query["sql"] for query in captured.captured_queries]
    if connection.vendor == "postgresql":
        assert '"runs_run"."public_id" = ANY(' in sql and sql.count(runs[0].public_id) == 1, sql
        assert "::varchar(64)[]" in sql, sql
    else:
        assert '"runs_run"."public_id" IN (' in sql, sql
