"""manage.py restore PATH [--format native|json]: a backup made by ``manage.py backup`` into an
empty database (see kernelindex/management/sitebackup.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from kernelindex.management import sitebackup


class Command(BaseCommand):
    help = (
        "Restore a backup from `manage.py backup` into an empty database: native backups into the same "
        "kind of database, JSON dumps into any (migrate runs first)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=sitebackup.FORMATS, default="native")
        parser.add_argument("--database", default="default")

    def handle(self, *args: Any, path: Path, format: str, database: str, **options: Any) -> None:
        sitebackup.restore(path, fmt=format, alias=database)
        self.stdout.write(f"Restored the site ({format}) from {path}")
