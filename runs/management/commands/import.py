"""``manage.py import PATH [PATH…]``: recognise each file's format, validate everything, then
write it all in one transaction. Any bad file stops the import with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from runs.importers import load_all
from runs.importers.base import FORMATS, ImportFailure, Parsed, detect, load
from runs.manifests import ManifestError


class DryRun(Exception):
    """Raised inside the transaction to roll a --dry-run back."""


def expand(paths: list[str]) -> list[Path]:
    """Files as given; folders become every .json/.jsonl file under them, sorted."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl"})
            if not found:
                raise CommandError(f"{path}: no .json or .jsonl files in this folder")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise CommandError(f"{path}: no such file or folder")
    return files


def parse_paths(paths: list[str], fmt: str | None = None) -> list[Parsed]:
    load_all()
    parsed: list[Parsed] = []
    for path in expand(paths):
        loaded = load(path)
        chosen = FORMATS[fmt] if fmt else detect(loaded)
        parsed.append(chosen.parse(loaded))
    return sort_for_apply(parsed)


def sort_for_apply(parsed: list[Parsed]) -> list[Parsed]:
    """Catalogue formats (benchmarks, workloads) before runs, so runs find their benchmark."""
    from runs.importers import APPLY_ORDER

    return sorted(parsed, key=lambda item: APPLY_ORDER.get(item.format, 50))


def apply_all(parsed: list[Parsed], options: dict[str, Any] | None = None) -> list[str]:
    with transaction.atomic():
        return [f"{item.path}: {item.format}, {item.apply(options or {})}" for item in parsed]


class Command(BaseCommand):
    help = "Import manifest bundles and source files (SOL-ExecBench, KernelBench) atomically."

    def add_arguments(self, parser: CommandParser) -> None:
        load_all()
        parser.add_argument("paths", nargs="+", help="files or folders")
        parser.add_argument("--format", choices=sorted(FORMATS), help="force a format instead of detecting it")
        parser.add_argument("--dry-run", action="store_true", help="validate and report; write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            parsed = parse_paths(options["paths"], options["format"])
            try:
                with transaction.atomic():
                    lines = apply_all(parsed, options)
                    if options["dry_run"]:
                        raise DryRun
            except DryRun:
                lines = [line + " (dry run: nothing written)" for line in lines]
        except (ImportFailure, ManifestError) as error:
            raise CommandError(str(error)) from None
        for line in lines:
            self.stdout.write(line)
