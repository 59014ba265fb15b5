"""``Run.timing_json`` and ``Run.metrics_json`` (runs.summaries): the migration that added
them fills them from the stored documents with the values an import writes."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import orjson
import pytest
from django.apps import apps
from django.db import connection

from runs.models import Run
from runs.summaries import summaries_of
from tests.ingest.conftest import DATA_PATHS, import_paths

pytestmark = pytest.mark.django_db

migration = importlib.import_module("runs.migrations.0014_run_summaries")
fill = migration.fill


def test_the_migration_fills_each_run_with_what_an_import_writes() -> None:
    import_paths(*DATA_PATHS)
    imported = {run.pk: (run.timing_json, run.metrics_json) for run in Run.objects.all()}
    assert len(imported) > 250
    assert Run.objects.update(timing_json=None, metrics_json=None) == len(imported)
    # fill() asks the schema editor only for its connection (SQLite's editor cannot open inside
    # the test's transaction): this database's own statement, SQLite's or PostgreSQL's.
    fill(apps, SimpleNamespace(connection=connection))
    for run in Run.objects.all():
        expected = summaries_of(run.spec)
        assert expected == dict(zip(("timing_json", "metrics_json"), imported[run.pk], strict=True))
        for name, text in expected.items():
            stored = getattr(run, name)
            # The database's spelling may differ from orjson's, never the value.
            assert (stored is None) == (text is None) and (text is None or orjson.loads(stored) == orjson.loads(text))


def test_summaries_are_objects_or_nothing() -> None:
    assert summaries_of({"timing": {"b": 1, "a": 2.5}, "sourceNative": {"metrics": [1]}}) == {
        "timing_json": '{"a":2.5,"b":1}',
        "metrics_json": None,
    }
    assert summaries_of(None) == {"timing_json": None, "metrics_json": None}


def test_the_migrations_python_way_fills_the_same_values() -> None:
    """Another database than SQLite or PostgreSQL gets fill_in_python: json's spelling there,
    the same values as an import's."""
    import_paths(*DATA_PATHS)
    imported = {run.pk: summaries_of(run.spec) for run in Run.objects.all()}
    Run.objects.update(timing_json=None, metrics_json=None)
    migration.fill_in_python(apps)
    runs = list(Run.objects.all())
    assert len(runs) == len(imported) > 250
    for run in runs:
        for name, text in imported[run.pk].items():
            stored = getattr(run, name)
            assert (stored is None) == (text is None) and (text is None or orjson.loads(stored) == orjson.loads(text))
