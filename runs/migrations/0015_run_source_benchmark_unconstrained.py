"""Two things every imported run paid for at commit or in ANALYZE, and nothing needed
(bench/import_bench.py; figures from 20,000-run inserts on PostgreSQL 15, 2 cores):

- The foreign-key constraints of ``Run.source`` and ``Run.benchmark``. A run's source and
  benchmark are its comparison group's (the group's key names both, and the import sets all
  three from one lookup), kept on the run for the indexes that lead with them; the group's
  constraint already vouches for them. Every imported run paid a check of each at commit, on
  the same hot row: 44 µs of checks a run with them, 25.5 without. Django still refuses to
  delete a source or benchmark that runs use (``on_delete=PROTECT`` is Django's, not the
  database's), and ``tests/ingest/test_import_data.py`` checks every run has its group's.
- The planner's statistics of the wide columns no query filters or sorts on (the documents,
  the identity, whose unique index tells the planner all it needs, and the JSON summaries):
  ANALYZE after a 100,000-run import went from 1.40 to 1.12 s of the server's CPU. PostgreSQL
  only (SQLite's ANALYZE reads indexes, not columns).

SQLite rebuilds the table to drop the constraints, and the rebuilt table has no statistics
(migration 0011): they are gathered again here.
"""

import django.db.models.deletion
from django.db import migrations, models

# No query filters or sorts on these: their statistics are never used.
UNFILTERED = {
    "runs_run": ("document", "identity", "labels", "timing_json", "metrics_json", "data_quality_note"),
    "runs_implementation": ("document",),
}


def statistics(target):
    def apply(apps, schema_editor):
        quote = schema_editor.quote_name
        if schema_editor.connection.vendor == "postgresql":
            for table, columns in UNFILTERED.items():
                changes = ", ".join(f"ALTER COLUMN {quote(column)} SET STATISTICS {target}" for column in columns)
                schema_editor.execute(f"ALTER TABLE {quote(table)} {changes}")
        elif schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(f"ANALYZE {quote('runs_run')}")

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0014_run_summaries"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="benchmark",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="runs",
                to="runs.benchmark",
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="source",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="runs",
                to="runs.source",
            ),
        ),
        # -1: the server's default statistics target again.
        migrations.RunPython(statistics(0), statistics(-1)),
    ]
