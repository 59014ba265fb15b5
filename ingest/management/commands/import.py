"""``manage.py import PATH [PATH…]``: a thin shell over ``ingest.pipeline.import_paths``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.formats import load_all
from ingest.formats.base import FORMATS, ImportFailure
from ingest.pipeline import import_paths
from runs.manifests import ManifestError


class Command(BaseCommand):
    help = "Import manifest bundles and source files (SOL-ExecBench, KernelBench) atomically."

    def add_arguments(self, parser: CommandParser) -> None:
        load_all()
        parser.add_argument("paths", nargs="+", help="files or folders")
        parser.add_argument("--format", choices=sorted(FORMATS), help="force a format instead of detecting it")
        parser.add_argument("--dry-run", action="store_true", help="validate and report; write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            lines = import_paths(options["paths"], fmt=options["format"], dry_run=options["dry_run"])
        except (ImportFailure, ManifestError) as error:
            raise CommandError(str(error)) from None
        for line in lines:
            # Rows imported with a data-quality note: said loudly, but they do not stop the import.
            self.stdout.write(self.style.WARNING(line) if line.startswith("warning:") else line)
