"""ComparisonGroup.reference_runs: a group's published reference rows, kept at every write by
runs.counts, so that a ranking page knows its row count (ranked_count + reference_runs) without
counting the runs. Filled here by one grouped query over the reference rows."""

from django.db import migrations, models
from django.db.models import Count


def fill(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    ComparisonGroup = apps.get_model("runs", "ComparisonGroup")
    counted = list(
        Run.objects.filter(visibility="published", is_reference=True)
        .order_by()
        .values("group_id")
        .annotate(n=Count("pk"))
    )
    groups = ComparisonGroup.objects.in_bulk([row["group_id"] for row in counted])
    for row in counted:
        groups[row["group_id"]].reference_runs = row["n"]
    ComparisonGroup.objects.bulk_update(list(groups.values()), ["reference_runs"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0012_benchmark_native_id_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="comparisongroup",
            name="reference_runs",
            field=models.PositiveIntegerField(default=0, editable=False, help_text="Published reference rows; kept at every write by runs.counts."),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
