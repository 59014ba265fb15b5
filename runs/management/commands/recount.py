"""``manage.py recount``: recompute every figure runs.counts keeps (runs, submitters, benchmarks,
GPUs, latest run of groups, benchmarks, sources, projects and environments) from the runs.

Every write keeps them already; this repairs them after a change made outside the import engine
and the moderation services (SQL by hand, a restore of part of a table), in one transaction."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from kernelindex.pagecache import bump_data_version
from runs import counts


class Command(BaseCommand):
    help = "Recompute the stored run counts of every group, benchmark, source, project and environment."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            counts.refresh_all()
            bump_data_version()
        self.stdout.write("recounted every stored figure")
