"""Fewer indexes for an import to keep up: PostgreSQL gets a second, ``varchar_pattern_ops``
index (for LIKE 'prefix%') on every unique or indexed text column. Nothing looks runs up by a
prefix of their identity (a long canonical JSON text) or digest, so those two only slow every
insert down. (A later AlterField of these columns may create them again; drop them again then.)"""

from django.db import migrations

INDEXES = ("runs_run_identity_d343edce_like", "runs_run_digest_58bc5902_like")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name in INDEXES:
            schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            'CREATE INDEX IF NOT EXISTS "runs_run_identity_d343edce_like" ON "runs_run" ("identity" text_pattern_ops)'
        )
        schema_editor.execute(
            'CREATE INDEX IF NOT EXISTS "runs_run_digest_58bc5902_like" ON "runs_run" ("digest" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    dependencies = [("runs", "0005_submitter_trigram_index")]

    operations = [migrations.RunPython(forwards, backwards)]
