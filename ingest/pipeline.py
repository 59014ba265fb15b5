"""The import pipeline that ``manage.py import``, the bench, the tests and the API share:
recognise each file's format, validate everything, then write it all in one transaction. Any
bad file stops the import with nothing written.

``import_paths`` is the entry; ``parse_paths`` and ``apply_all`` are its two halves, for
callers that time or inspect them separately (the bench).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import connection, transaction

from ingest.catalogue import import_benchmarks
from ingest.engine import import_bundles
from ingest.formats import APPLY_ORDER, load_all
from ingest.formats.base import (
    DATA_SUFFIXES,
    FORMATS,
    ImportFailure,
    Parsed,
    detect,
    is_sidecar,
    is_unit_folder,
    load,
)
from kernelindex import canonical
from kernelindex.collector import collector_paused
from runs.exports import streamed
from runs.identity import identity_text
from runs.manifests import ManifestError, VerifiedBundle, bundle_export
from runs.models import Run


def import_paths(paths: list[str], *, fmt: str | None = None, dry_run: bool = False) -> list[str]:
    """Import files and folders atomically; one line per file and per batch of runs. With
    ``dry_run`` everything is validated and written inside a transaction that is rolled back."""
    parsed = parse_paths(paths, fmt)
    try:
        with transaction.atomic():
            lines = apply_all(parsed, {"dry_run": dry_run})
            if dry_run:
                raise DryRun
    except DryRun:
        lines = [line + " (dry run: nothing written)" for line in lines]
    return lines


# Runs in one import from which the planner's statistics are refreshed at once: with the
# statistics of a smaller table, SQLite (which keeps none until asked) walked the wrong index on
# the GPU pages (125 ms instead of 57 on the shipped data), and PostgreSQL, before autovacuum
# came round, timed out on source and environment pages after a million-run import.
ANALYZE_AFTER = 5000


def analyze() -> None:
    """Refresh the query planner's statistics of the tables an import writes."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE runs_run, runs_comparisongroup, runs_benchmark, runs_implementation")
        elif connection.vendor == "sqlite":
            cursor.execute("ANALYZE")


class DryRun(Exception):
    """Raised inside the transaction to roll a --dry-run back."""


def expand(paths: list[str]) -> list[Path]:
    """Files as given; folders become every .json/.jsonl/.csv file under them, sorted.

    A folder that describes one thing through several files (a SOL-ExecBench definition folder
    with definition.json, a trace folder with summary.json) stays one unit, whether it is given
    directly or found inside a folder. Provenance sidecars (``*.provenance.json``) are read by
    the importer of the file they describe, not imported on their own. Other files found in a
    folder (READMEs, scripts) are returned too, and ``parse_paths`` reports them as skipped.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if is_unit_folder(path):
            files.append(path)
        elif path.is_dir():
            found = _walk(path)
            if not any(_is_data(item) for item in found):
                raise ImportFailure(path, "no .json, .jsonl or .csv files in this folder")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise ImportFailure(path, "no such file or folder")
    return files


def _walk(folder: Path) -> list[Path]:
    found: list[Path] = []
    for child in sorted(folder.iterdir()):
        if is_unit_folder(child):
            found.append(child)
        elif child.is_dir():
            found.extend(_walk(child))
        elif child.is_file() and not is_sidecar(child):
            found.append(child)
    return found


def _is_data(path: Path) -> bool:
    return path.is_dir() or path.suffix in DATA_SUFFIXES


def _skipped(path: Path) -> Parsed:
    """A file found in a folder that is not data (a README, a script): said, not imported."""
    return Parsed(path=path, format="not data", apply=None, summary=f"skipped: a {path.suffix or 'suffix-less'} file")


@collector_paused()
def parse_paths(paths: list[str], fmt: str | None = None) -> list[Parsed]:
    load_all()
    parsed: list[Parsed] = []
    given = {Path(raw) for raw in paths}
    for path in expand(paths):
        if not _is_data(path) and path not in given:
            parsed.append(_skipped(path))
            continue
        loaded = load(path)
        chosen = FORMATS[fmt] if fmt else detect(loaded)
        parsed.append(chosen.parse(loaded))
    return sort_for_apply(parsed)


def sort_for_apply(parsed: list[Parsed]) -> list[Parsed]:
    """Catalogue formats (benchmarks, workloads) before runs, so runs find their benchmark."""
    return sorted(parsed, key=lambda item: APPLY_ORDER.get(item.format, 50))


@collector_paused()
def apply_all(parsed: list[Parsed], options: dict[str, Any] | None = None) -> list[str]:
    """Write everything in one transaction: first every file's benchmarks and workloads
    (merged, so the order of the files does not matter), then the runs of all files in shared
    batches (one batch per 2,000 runs, not per file: per-file round trips dominated imports of
    many small boards), each revision still naming its file."""
    lines: list[str] = []
    with transaction.atomic():
        facts = [fact for item in parsed for fact in item.facts]
        if facts:
            lines.append(f"catalogue: {import_benchmarks(facts)}")
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
                result = import_bundles(
                    one_per_identity(bundle for item in items for bundle in item.bundles),
                    trust_annotations=trusted,
                    describe=lambda bundle, described=described: described[id(bundle)],
                )
            except ManifestError as error:
                raise _naming_a_file(error, items) from None
            what = "manifest bundles" if trusted else "source runs"
            lines.append(f"{what} of {len(items)} file(s): {result}")
        lines.extend(f"warning: {warning}" for item in parsed for warning in item.warnings)
        if not (options or {}).get("dry_run") and sum(len(item.bundles) for item in parsed) >= ANALYZE_AFTER:
            analyze()
    return lines


def one_per_identity(bundles: Iterator[VerifiedBundle]) -> list[VerifiedBundle]:
    """One bundle per run identity, in first-seen order.

    The same run can reach one import from two files: a board snapshot stored twice (kernel
    10's board, retrieved at 18:19 and 18:40, same response), a file published under two names
    (``A6000_babel_v0.0`` = ``A6000_babel``), overlapping CSVs (Liger's ``grpo_vocab_chunk.csv``
    and ``all_benchmark_data.csv``). The first file (paths are walked in sorted order) gives the
    run and its provenance; a later bundle replaces it only when the run itself differs (a
    changed row: the later wins, as a re-import would). Deciding this before the batches keeps a
    second import from flip-flopping between the two files' annotations.
    """
    chosen: dict[str, VerifiedBundle] = {}
    for bundle in bundles:
        identity = identity_text(bundle)
        first = chosen.get(identity)
        if first is None or first.digests["run"] != bundle.digests["run"]:
            chosen[identity] = bundle
    return list(chosen.values())


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


def export_lines(queryset: Any = None) -> Iterator[str]:
    """Every run (or the runs of ``queryset``) as one line of its full canonical bundle, in
    public-id order, so export → import into an empty database → export is byte-identical."""
    runs = (
        (queryset if queryset is not None else Run.objects.all())
        .select_related("protocol", "environment", "workload", "implementation")
        .order_by("public_id")
    )
    for run in streamed(runs):
        yield canonical.dumps_str(bundle_export(run)) + "\n"
