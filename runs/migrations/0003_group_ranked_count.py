"""ComparisonGroup.ranked_count: the M of "rank N of M", stored with the ranks by
runs.ranking.recompute_groups; existing groups get it from their stored ranks."""

from django.db import migrations, models
from django.db.models import Count, Q


def count_ranked(apps, schema_editor):
    ComparisonGroup = apps.get_model("runs", "ComparisonGroup")
    groups = list(ComparisonGroup.objects.annotate(n=Count("runs", filter=Q(runs__rank__isnull=False))))
    for group in groups:
        group.ranked_count = group.n
    ComparisonGroup.objects.bulk_update(groups, ["ranked_count"], batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [("runs", "0002_run_data_quality_note")]

    operations = [
        migrations.AddField(
            model_name="comparisongroup",
            name="ranked_count",
            field=models.PositiveIntegerField(
                default=0, help_text="Runs holding a rank in the group; written by runs.ranking with the ranks."
            ),
        ),
        migrations.RunPython(count_ranked, migrations.RunPython.noop),
    ]
