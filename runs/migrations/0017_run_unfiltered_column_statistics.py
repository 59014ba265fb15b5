"""The planner's statistics of the run columns no query filters, sorts or joins on, again.

Migration 0015 stopped gathering them for the wide columns (documents, identity, summaries).
These are the run's other columns that no page, API filter or ordering, or lookup of the
importer puts in a WHERE, ORDER BY or JOIN: declared digests, texts shown as they are,
timestamps of the import, the source's own figures. ANALYZE after a 100,000-run import spent
1.6 s of the server's CPU gathering statistics of them all, 0.95 s without these
(PostgreSQL 15). PostgreSQL only: SQLite's ANALYZE reads indexes, not columns.
"""

from django.db import migrations

UNFILTERED = (
    "digest",
    "protocol_digest",
    "environment_digest",
    "workload_digest",
    "implementation_digest",
    "external_id",
    "name",
    "title",
    "primary_statistic",
    "status_detail",
    "public_reason",
    "provenance_url",
    "published_at",
    "retrieved_at",
    "updated_at",
    "revision",
    "avg_speedup",
    "fast_1_count",
    "fast_1_total",
    "source_rank",
)


def set_target(target):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        quote = schema_editor.quote_name
        changes = ", ".join(f"ALTER COLUMN {quote(column)} SET STATISTICS {target}" for column in UNFILTERED)
        schema_editor.execute(f"ALTER TABLE {quote('runs_run')} {changes}")

    return apply


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0016_run_source_submitter_index"),
    ]

    # -1: the server's default statistics target again.
    operations = [migrations.RunPython(set_target(0), set_target(-1))]
