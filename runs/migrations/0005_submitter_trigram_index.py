"""Search finds submitters by a part of their name (``submitter__icontains``, i.e.
``UPPER(submitter) LIKE UPPER('%…%')``): on PostgreSQL a trigram index answers that without
reading every run. SQLite has no such index, and a PostgreSQL without the contrib extension
does without it; nothing to do there."""

from django.db import migrations

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS run_submitter_trgm ON runs_run USING gin (UPPER(submitter::text) gin_trgm_ops)",
]
DROP = ["DROP INDEX IF EXISTS run_submitter_trgm"]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")
        if cursor.fetchone() is None:  # contrib not installed: search reads the runs instead
            return
    for statement in CREATE:
        schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("runs", "0004_stored_counts_and_list_indexes")]

    operations = [migrations.RunPython(forwards, backwards)]
