"""Run.timing_json and Run.metrics_json: two objects of the run's spec as JSON text, written with
the document from now on (ingest.session, runs.summaries), so the API's list of runs
no longer has the database take them out of each whole document. Filled here from the stored
documents: by the database itself on SQLite and PostgreSQL (a million runs in one statement),
through Python elsewhere. The database's spelling of a number may differ from orjson's; the
values are the same."""

import json

from django.db import migrations, models

_PATHS = {"timing_json": ("timing",), "metrics_json": ("sourceNative", "metrics")}


def _sqlite(column: str, path: tuple[str, ...]) -> str:
    where = "$.spec." + ".".join(path)
    return f"{column} = CASE WHEN json_valid(document) AND json_type(document, '{where}') = 'object' THEN document -> '{where}' END"


def _postgresql(column: str, path: tuple[str, ...]) -> str:
    where = "{spec," + ",".join(path) + "}"
    value = f"(document::json #> '{where}')"
    return f"{column} = CASE WHEN json_typeof({value}) = 'object' THEN {value}::text END"


def fill(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor in ("sqlite", "postgresql"):
        spell = _sqlite if connection.vendor == "sqlite" else _postgresql
        assignments = ", ".join(spell(column, path) for column, path in _PATHS.items())
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE runs_run SET {assignments}")
        return
    fill_in_python(apps)


def fill_in_python(apps):
    """What fill() does on any other database, run by run."""
    Run = apps.get_model("runs", "Run")
    changed = []
    for run in Run.objects.only("pk", "document").iterator(chunk_size=2000):
        spec = json.loads(run.document).get("spec")
        for column, path in _PATHS.items():
            value = spec
            for step in path:
                value = value.get(step) if isinstance(value, dict) else None
            setattr(run, column, json.dumps(value, sort_keys=True) if isinstance(value, dict) else None)
        changed.append(run)
        if len(changed) == 2000:  # a chunk at a time: a million runs never sit in memory at once
            Run.objects.bulk_update(changed, list(_PATHS), batch_size=1000)
            changed = []
    Run.objects.bulk_update(changed, list(_PATHS), batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0013_group_reference_runs"),
    ]

    operations = [
        migrations.AddField(model_name="run", name="timing_json", field=models.TextField(blank=True, editable=False, null=True)),
        migrations.AddField(model_name="run", name="metrics_json", field=models.TextField(blank=True, editable=False, null=True)),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
