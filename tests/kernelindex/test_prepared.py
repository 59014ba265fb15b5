"""``kernelindex.prepared``: a query compiled once answers every later call as the ordinary
queryset would, with the values of that call."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kernelindex.prepared import Prepared, PreparedIn
from runs import selectors
from runs.models import ComparisonGroup, Run
from tests.factories import sol_group

pytestmark = pytest.mark.django_db


def _fields(run: Run) -> tuple:
    """What a page reads of a run and of everything joined to it."""
    implementation = run.implementation
    return (
        run.pk,
        run.public_id,
        run.digest,
        run.document,
        run.observed_at,
        run.latency_ns,
        run.source.slug,
        run.benchmark.native_id,
        run.benchmark.source.slug,
        run.group.key,
        run.environment.product,
        run.protocol.harness_label,
        implementation.project.slug if implementation and implementation.project else None,
    )


def test_every_call_answers_what_the_queryset_answers_with_its_own_values() -> None:
    sol_group(3)
    by_id = Prepared(lambda public_id: selectors.run_queryset().filter(public_id=public_id)[:1], public_id=str)
    runs = list(Run.objects.order_by("public_id"))
    with CaptureQueriesContext(connection) as captured:
        for run in runs + runs:  # compiled on the first call, reused on the others
            (found,) = by_id(public_id=run.public_id)
            (expected,) = selectors.run_queryset().filter(public_id=run.public_id)
            assert _fields(found) == _fields(expected)
    # One query per call, the same SQL as the ordinary queryset's, with this call's id.
    ours = captured.captured_queries[0::2]
    theirs = captured.captured_queries[1::2]
    assert len(ours) == len(theirs) == 6
    for mine, ordinary, run in zip(ours, theirs, runs + runs, strict=True):
        assert run.public_id in mine["sql"]
        assert mine["sql"].replace(" LIMIT 1", "") == ordinary["sql"]
    assert by_id(public_id="no-such-run") == []


def test_ints_slices_and_several_values() -> None:
    sol_group(4)
    group = ComparisonGroup.objects.get()
    ranked = Prepared(
        lambda group_id, rank: Run.objects.filter(group_id=group_id, rank__lte=rank).order_by("rank")[:10],
        group_id=int,
        rank=int,
    )
    for rank in (1, 3, 2, 0):
        assert [r.rank for r in ranked(group_id=group.pk, rank=rank)] == list(range(1, rank + 1))
    assert ranked(group_id=group.pk + 1000, rank=4) == []


def test_none_and_other_types_run_the_ordinary_way() -> None:
    sol_group(2)
    ungrouped = Prepared(lambda group_id: Run.objects.filter(group_id=group_id), group_id=int)
    assert ungrouped(group_id=None) == []  # IS NULL: other SQL, not the compiled one
    group = ComparisonGroup.objects.get()
    assert len(ungrouped(group_id=group.pk)) == 2
    assert len(ungrouped(group_id=str(group.pk))) == 2
    with pytest.raises(TypeError, match="takes"):
        ungrouped(group=group.pk)


def test_a_value_that_is_not_a_parameter_fails_on_first_use() -> None:
    # icontains wraps the value in %…%: its position among the parameters cannot be found.
    rewritten = Prepared(lambda name: Run.objects.filter(title__icontains=name), name=str)
    with pytest.raises(ImproperlyConfigured, match="not a parameter"):
        rewritten(name="kv")
    with pytest.raises(ImproperlyConfigured, match="str or int"):
        Prepared(lambda when: Run.objects.filter(observed_at=when), when=float)


def test_sql_that_depends_on_the_values_fails_on_first_use() -> None:
    sliced = Prepared(lambda n: Run.objects.order_by("pk")[:n], n=int)  # LIMIT n is written into the SQL
    with pytest.raises(ImproperlyConfigured, match="depends on its values"):
        sliced(n=3)


def test_slices_append_their_limit_and_offset_to_one_compiled_query() -> None:
    sol_group(5)
    group = ComparisonGroup.objects.get()
    ranked = Prepared(
        lambda group_id: Run.objects.filter(group_id=group_id).select_related("implementation").order_by("rank"),
        group_id=int,
    )
    expected = list(Run.objects.filter(group=group).select_related("implementation").order_by("rank"))
    with CaptureQueriesContext(connection) as captured:
        for start, stop in ((0, 2), (2, 4), (4, 6), (1, 1), (0, 50)):
            found = ranked.slice(start, stop, group_id=group.pk)
            assert [(r.pk, r.rank, r.implementation_id) for r in found] == [
                (r.pk, r.rank, r.implementation_id) for r in expected[start:stop]
            ]
            # The related row is built with the run, as select_related does: no query for it.
            assert [getattr(r.implementation, "pk", None) for r in found] == [
                r.implementation_id for r in expected[start:stop]
            ]
    assert len(captured) == 5
    # Written into the SQL, so a prepared statement's generic plan knows the page's size.
    assert [query["sql"][query["sql"].index(" LIMIT ") :] for query in captured.captured_queries] == [
        " LIMIT 2 OFFSET 0",
        " LIMIT 2 OFFSET 2",
        " LIMIT 2 OFFSET 4",
        " LIMIT 0 OFFSET 1",
        " LIMIT 50 OFFSET 0",
    ]
    assert ranked.slice(0, 3, group_id=None) == []
    with pytest.raises(ValueError, match="start <= stop"):
        ranked.slice(3, 1, group_id=group.pk)
    own = Prepared(lambda group_id: Run.objects.filter(group_id=group_id).order_by("rank")[:2], group_id=int)
    with pytest.raises(ImproperlyConfigured, match="sliced by its own queryset"):
        own.slice(0, 1, group_id=group.pk)


def test_annotations_and_prefetches_are_kept_and_values_querysets_refused() -> None:
    sol_group(3)
    group = ComparisonGroup.objects.get()
    annotated = Prepared(lambda group_id: Run.objects.filter(group_id=group_id).with_eligibility(), group_id=int)
    assert sorted((r.pk, r.eligible) for r in annotated(group_id=group.pk)) == sorted(
        (r.pk, r.eligible) for r in Run.objects.filter(group=group).with_eligibility()
    )
    prefetched = Prepared(
        lambda group_id: ComparisonGroup.objects.filter(pk=group_id).prefetch_related("runs"), group_id=int
    )
    with CaptureQueriesContext(connection) as captured:
        (found,) = prefetched(group_id=group.pk)
        assert len(found.runs.all()) == 3
    assert len(captured) == 2
    values = Prepared(lambda group_id: Run.objects.filter(group_id=group_id).values("pk"), group_id=int)
    with pytest.raises(ImproperlyConfigured, match="model instances"):
        values(group_id=group.pk)


def test_values_lists_and_id_lists_of_any_length() -> None:
    sol_group(3)
    runs = list(Run.objects.order_by("pk"))
    by_ids = PreparedIn(
        lambda ids: Run.objects.filter(pk__in=ids).order_by("pk").values_list("pk", "public_id", "observed_at")
    )
    expected = list(Run.objects.order_by("pk").values_list("pk", "public_id", "observed_at"))
    with CaptureQueriesContext(connection) as captured:
        for ids in ([runs[0].pk], [runs[2].pk, runs[0].pk], [r.pk for r in runs], [runs[1].pk], []):
            assert by_ids(ids) == [row for row in expected if row[0] in ids]
    assert len(captured) == 4  # no query for no ids
    flat = Prepared(lambda group_id: Run.objects.filter(group_id=group_id).values_list("pk", flat=True), group_id=int)
    with pytest.raises(ImproperlyConfigured, match="values_list"):
        flat(group_id=runs[0].group_id)
