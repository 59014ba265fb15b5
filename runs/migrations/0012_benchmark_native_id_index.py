"""An index of benchmarks by native id, for the API's groups list (runs.models.Benchmark.Meta).
Ends with ANALYZE of the table: without statistics of the new index, SQLite's planner would not
take it until the next large import gathered them."""

from django.db import migrations, models


def analyze(apps, schema_editor):
    schema_editor.execute(f"ANALYZE {schema_editor.quote_name('runs_benchmark')}")


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0011_fewer_write_indexes"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="benchmark",
            index=models.Index(fields=["native_id"], name="benchmark_native_id"),
        ),
        migrations.RunPython(analyze, migrations.RunPython.noop),
    ]
