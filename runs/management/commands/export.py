"""``manage.py export``: every run as one JSONL line of its full canonical bundle.

Lines are RFC 8785 canonical JSON, in public-id order, so export → import into an empty
database → export is byte-identical.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from kernelindex import canonical
from runs.manifests import bundle_export
from runs.models import Run


def export_lines(queryset: Any = None) -> Any:
    runs = (
        (queryset if queryset is not None else Run.objects.all())
        .select_related("protocol", "environment", "workload", "implementation")
        .order_by("public_id")
    )
    for run in runs.iterator(chunk_size=2000):
        yield canonical.dumps_str(bundle_export(run)) + "\n"


class Command(BaseCommand):
    help = "Write every run as JSONL canonical manifest bundles to stdout or --output."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["output"]:
            with open(options["output"], "w", encoding="utf-8", newline="\n") as out:
                for line in export_lines():
                    out.write(line)
            return
        for line in export_lines():
            self.stdout.write(line, ending="")
