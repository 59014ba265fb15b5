"""``manage.py export`` (a thin shell over ``ingest.pipeline.export_lines``): every run as one
JSONL line of its full canonical bundle.

Lines are RFC 8785 canonical JSON, in public-id order, so export → import into an empty
database → export is byte-identical.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ingest.pipeline import export_lines


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
