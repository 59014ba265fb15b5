"""``kernelindex.loading.LoadedQuickly``: an instance loaded without ``Model.__init__`` is the
instance Django builds, attribute for attribute, joined rows and deferred columns included."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from django.db.models import Model, signals

from runs.models import ComparisonGroup, Run, RunRevision
from tests.factories import sol_group

pytestmark = pytest.mark.django_db


@contextmanager
def djangos_own_path() -> Iterator[None]:
    """A post_init listener makes every model take Model.from_db (and so __init__)."""

    def listener(**kwargs: Any) -> None:
        pass

    signals.post_init.connect(listener)
    try:
        yield
    finally:
        signals.post_init.disconnect(listener)


def state(obj: Any) -> dict[str, Any]:
    """Everything an instance holds: its columns, its database and the joined rows, recursively."""
    attributes = {name: value for name, value in vars(obj).items() if name != "_state"}
    cached = obj._state.fields_cache
    return {
        "class": type(obj),
        "attributes": attributes,
        "db": obj._state.db,
        "adding": obj._state.adding,
        "deferred": obj.get_deferred_fields(),
        "joined": {name: None if row is None else state(row) for name, row in cached.items()},
    }


QUERIES = {
    "whole rows": lambda: Run.objects.order_by("pk"),
    "joined, as lists load them": lambda: Run.objects.for_listing().order_by("pk"),
    "only some columns": lambda: (
        Run.objects.select_related("group", "implementation__project")
        .only("public_id", "latency_ns", "group__key", "implementation__project__slug")
        .order_by("pk")
    ),
    "deferred columns": lambda: Run.objects.defer("document", "identity").order_by("-pk"),
    "groups with a join": lambda: ComparisonGroup.objects.select_related("benchmark__source").order_by("pk"),
    "revisions": lambda: RunRevision.objects.select_related("run").order_by("pk"),
}


@pytest.mark.parametrize("name", QUERIES)
def test_a_quickly_loaded_instance_is_the_one_django_builds(name: str) -> None:
    sol_group(4)
    with mock.patch.object(Model, "__init__", side_effect=AssertionError("Model.__init__ was called")):
        quick = [state(obj) for obj in QUERIES[name]()]
    with djangos_own_path():
        built = [state(obj) for obj in QUERIES[name]()]
    assert quick and quick == built


def test_quickly_loaded_instances_behave_as_models() -> None:
    sol_group(2)
    run = Run.objects.only("public_id", "group_id").order_by("pk").first()
    assert run.group.key and run.get_absolute_url() == f"/runs/{run.public_id}/"
    assert run.latency_ns is not None  # a deferred column loads on first use
    assert "latency_ns" not in run.get_deferred_fields()
    run.title = "renamed"
    run.save(update_fields=["title"])
    assert Run.objects.get(pk=run.pk).title == "renamed" and not run._state.adding
    assert run == Run.objects.get(pk=run.pk) and hash(run) == hash(run.pk)
