"""``manage.py import PATH [PATH…]``: recognise each file's format, validate everything, then
write it all in one transaction. Any bad file stops the import with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from runs.importers import load_all
from runs.importers.base import FORMATS, ImportFailure, Parsed, detect, is_sidecar, is_unit_folder, load
from runs.manifests import ManifestError


class DryRun(Exception):
    """Raised inside the transaction to roll a --dry-run back."""


def expand(paths: list[str]) -> list[Path]:
    """Files as given; folders become every .json/.jsonl file under them, sorted.

    A folder that describes one thing through several files (a SOL-ExecBench definition folder
    with definition.json, a trace folder with summary.json) stays one unit, whether it is given
    directly or found inside a folder. Provenance sidecars (``*.provenance.json``) are read by
    the importer of the file they describe, not imported on their own.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if is_unit_folder(path):
            files.append(path)
        elif path.is_dir():
            found = _walk(path)
            if not found:
                raise CommandError(f"{path}: no .json or .jsonl files in this folder")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise CommandError(f"{path}: no such file or folder")
    return files


def _walk(folder: Path) -> list[Path]:
    found: list[Path] = []
    for child in sorted(folder.iterdir()):
        if is_unit_folder(child):
            found.append(child)
        elif child.is_dir():
            found.extend(_walk(child))
        elif child.is_file() and child.suffix in {".json", ".jsonl"} and not is_sidecar(child):
            found.append(child)
    return found


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
    """Write everything in one transaction: first every file's benchmarks and workloads
    (merged, so the order of the files does not matter), then the runs of all files in shared
    batches (one batch per 2,000 runs, not per file: per-file round trips dominated imports of
    many small boards), each revision still naming its file."""
    from runs import services

    lines: list[str] = []
    with transaction.atomic():
        facts = [fact for item in parsed for fact in item.facts]
        if facts:
            lines.append(f"catalogue: {services.benchmarks_import(facts)}")
        for item in parsed:
            if item.apply is not None:
                lines.append(f"{item.path}: {item.format}, {_apply_one(item, options or {})}")
            else:
                lines.append(f"{item.path}: {item.format}, {item.summary}")
        for trusted in (True, False):
            items = [item for item in parsed if item.bundles and item.trusted is trusted]
            if not items:
                continue
            described = {id(bundle): (item.label, item.reason) for item in items for bundle in item.bundles}
            try:
                result = services.bundles_import(
                    (bundle for item in items for bundle in item.bundles),
                    trust_annotations=trusted,
                    describe=lambda bundle, described=described: described[id(bundle)],
                )
            except ManifestError as error:
                raise _naming_a_file(error, items) from None
            what = "manifest bundles" if trusted else "source runs"
            lines.append(f"{what} of {len(items)} file(s): {result}")
    return lines


def _apply_one(item: Parsed, options: dict[str, Any]) -> str:
    try:
        return item.apply(options)  # type: ignore[misc]
    except ManifestError as error:
        raise _naming_a_file(error, [item]) from None


def _naming_a_file(error: ManifestError, items: list[Parsed]) -> Exception:
    """A problem found while writing (an unknown source…): make sure the message names the file."""
    message = str(error)
    if any(str(item.path) in message for item in items):
        return error
    return ImportFailure(items[0].path if len(items) == 1 else ", ".join(str(i.path) for i in items), message)


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
