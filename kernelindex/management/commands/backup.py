"""manage.py backup PATH [--format native|json]: the whole site, every table (see
kernelindex/management/sitebackup.py for the formats)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from kernelindex.management import sitebackup


class Command(BaseCommand):
    help = (
        "Back up the whole site to PATH: an SQLite file (online backup API) or a pg_dump custom archive "
        "(--format native, the default), or a portable JSON dump for moving between databases (--format json)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", choices=sitebackup.FORMATS, default="native")
        parser.add_argument("--database", default="default")

    def handle(self, *args: Any, path: Path, format: str, database: str, **options: Any) -> None:
        sitebackup.backup(path, fmt=format, alias=database)
        self.stdout.write(f"Backed up the site ({format}) to {path}")
