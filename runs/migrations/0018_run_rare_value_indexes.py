"""The rare values of the runs lists' filters, each read from an index in the lists' order.

A list filtered by a value few runs have, and those old ones (``status=failed``, the
``kernelindex_rerun`` evidence level, ``ranked=false``), walked the newest-first index past
most runs to fill a page: 0.4-1.0 s at 1,000,000 runs on PostgreSQL 15 (``/runs/?status=failed``
0.8 s, ``/api/v1/runs/?ranked=false`` 1.0 s), and the runs index's bounded count read every run.
Each index holds only the runs with a rare value, so an import of passed, ranked,
source-reported runs (nearly all of them) writes nothing to it.
"""

import datetime
import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0017_run_unfiltered_column_statistics"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("status"),
                models.OrderBy(
                    django.db.models.functions.comparison.Coalesce(
                        "observed_at", models.Value(datetime.datetime(1, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
                    ),
                    descending=True,
                ),
                models.F("public_id"),
                condition=models.Q(("visibility", "published"), models.Q(("status", "passed"), _negated=True)),
                name="run_rare_status_observed",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("evidence_level"),
                models.OrderBy(
                    django.db.models.functions.comparison.Coalesce(
                        "observed_at", models.Value(datetime.datetime(1, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
                    ),
                    descending=True,
                ),
                models.F("public_id"),
                condition=models.Q(
                    ("visibility", "published"), models.Q(("evidence_level", "source_reported"), _negated=True)
                ),
                name="run_rare_evidence_observed",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.OrderBy(
                    django.db.models.functions.comparison.Coalesce(
                        "observed_at", models.Value(datetime.datetime(1, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
                    ),
                    descending=True,
                ),
                models.F("public_id"),
                condition=models.Q(("visibility", "published"), ("rank__isnull", True)),
                name="run_unranked_observed",
            ),
        ),
    ]
