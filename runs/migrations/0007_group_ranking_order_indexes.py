"""A group's ranking page in the ranking rule's order (``runs.selectors.metric_order``: SOL score
descending or latency ascending, nulls last, then observed_at and public id), so a page reads its
rows from an index instead of sorting the group. PostgreSQL only: SQLite cannot write NULLS LAST
in an index, and at its sizes a sort costs nothing."""

from django.db import migrations

CREATE = [
    "CREATE INDEX IF NOT EXISTS run_group_sol_order ON runs_run "
    "(group_id, sol_score DESC NULLS LAST, observed_at ASC NULLS LAST, public_id)",
    "CREATE INDEX IF NOT EXISTS run_group_latency_order ON runs_run "
    "(group_id, latency_ns ASC NULLS LAST, observed_at ASC NULLS LAST, public_id)",
]
DROP = ["DROP INDEX IF EXISTS run_group_sol_order", "DROP INDEX IF EXISTS run_group_latency_order"]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("runs", "0006_drop_unused_pattern_indexes")]

    operations = [migrations.RunPython(forwards, backwards)]
