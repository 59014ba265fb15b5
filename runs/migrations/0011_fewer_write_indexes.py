"""Three indexes every imported run paid for and no query reads (each checked with EXPLAIN on
a million runs): the run digest's (nothing looks a run up by digest; the admin's search is a
substring match), the revisions' run index (the unique (run, number) constraint starts with the
run), and PostgreSQL's ``varchar_pattern_ops`` copy of the public id's (nothing looks a run up
by a prefix of its id; the unique index serves equality). Ends with ANALYZE of both tables."""

import django.db.models.deletion
from django.db import migrations, models

PATTERN_INDEX = "runs_run_public_id_4bb7fe14_like"


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{PATTERN_INDEX}"')
    # SQLite rebuilds a table to alter a field, and the rebuilt table has no statistics: its
    # planner then walked the wrong index (the home page's latest runs: 2 → 28 ms on the
    # shipped data) until the next large import ran ANALYZE. Gather them again here.
    for table in ("runs_run", "runs_runrevision"):
        schema_editor.execute(f"ANALYZE {schema_editor.quote_name(table)}")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{PATTERN_INDEX}" ON "runs_run" ("public_id" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0010_group_listing_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="digest",
            field=models.CharField(max_length=71),
        ),
        migrations.AlterField(
            model_name="runrevision",
            name="run",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="revisions",
                to="runs.run",
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
