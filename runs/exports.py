"""Rows of a run list as CSV and JSONL: the one writer behind the API's ``export/csv`` and every
page's "download this view" links (``web`` may not import ``api``, so it lives here).

Each function iterates the QuerySet through ``streamed`` and yields one line at a time, so memory
stays flat however many runs match; the rows come in chunks from one query (give it
``Run.objects.for_listing()``: every column below is read from a joined row).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet

from kernelindex import spreadsheets
from runs.models import Run

CHUNK = 2000


def streamed(queryset: QuerySet, chunk_size: int = CHUNK) -> Iterator[Any]:
    """The queryset's rows from one server-side cursor, fetched ``chunk_size`` at a time.

    On PostgreSQL inside a transaction: a cursor declared outside one (autocommit, as a request
    or ``manage.py export`` is) is a cursor WITH HOLD, whose whole result PostgreSQL computes and
    stores before the first row is fetched: an export of 1,000,000 runs sent its first row after
    23.6 s, and the server held the full result meanwhile. Inside one, rows leave as they are
    read. (A download stopped early closes the generator, which ends the transaction.) Already
    inside one (a test, a caller's atomic block), the cursor is declared without HOLD anyway."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield from queryset.iterator(chunk_size=chunk_size)
        return
    with transaction.atomic():
        yield from queryset.iterator(chunk_size=chunk_size)


CSV_COLUMNS = [
    ("id", "public_id"),
    ("url", None),
    ("digest", "digest"),
    ("externalId", "external_id"),
    ("source", None),
    ("benchmark", None),
    ("comparisonKey", None),
    ("rank", "rank"),
    ("sourceRank", "source_rank"),
    ("isReference", "is_reference"),
    ("status", "status"),
    ("evidenceLevel", "evidence_level"),
    ("submitter", "submitter"),
    ("project", None),
    ("gpu", None),
    ("architecture", None),
    ("harness", None),
    ("harnessVersion", None),
    ("primaryStatistic", "primary_statistic"),
    ("latencyNs", "latency_ns"),
    ("solScore", "sol_score"),
    ("avgSpeedup", "avg_speedup"),
    ("fast1Count", "fast_1_count"),
    ("fast1Total", "fast_1_total"),
    ("observedAt", None),
    ("publishedAt", None),
]


def _iso(moment: Any) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else ""


def run_value(run: Run, column: str, attribute: str | None) -> Any:
    """The value of one column for one run, typed (None for missing)."""
    if attribute is not None:
        return getattr(run, attribute)
    project = run.implementation.project if run.implementation else None
    computed = {
        "url": lambda: settings.SITE_URL + run.get_absolute_url(),
        "source": lambda: run.source.slug,
        "benchmark": lambda: run.benchmark.native_id,
        "comparisonKey": lambda: run.group.key,
        "project": lambda: project.name if project else "",
        "gpu": lambda: run.environment.product,
        "architecture": lambda: run.environment.architecture,
        "harness": lambda: run.group.harness_name,
        "harnessVersion": lambda: run.group.harness_version,
        "observedAt": lambda: _iso(run.observed_at),
        "publishedAt": lambda: _iso(run.published_at),
    }
    return computed[column]()


def run_row(run: Run) -> dict[str, Any]:
    """One run as a flat, typed record: the JSONL twin of a CSV row."""
    return {column: run_value(run, column, attribute) for column, attribute in CSV_COLUMNS}


def csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    # Text starting like a formula gets a leading apostrophe (kernelindex.spreadsheets, the
    # one rule every CSV writer of the project follows); numbers stay numbers.
    return spreadsheets.cell(value)


def table_csv_lines(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """A header row, then one formula-safe CSV line per row."""
    buffer = io.StringIO()
    # RFC 4180 line ends: with "\n" alone, csv leaves a cell holding "\r" unquoted, and readers
    # split the row there.
    writer = csv.writer(buffer, lineterminator="\r\n")

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)
        return text

    writer.writerow([csv_cell(column) for column in columns])
    yield flush()
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
        yield flush()


def jsonl(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def csv_lines(queryset: QuerySet) -> Iterator[str]:
    """The run list as CSV: a header row, then one row per run (CSV_COLUMNS)."""
    rows = ([run_value(run, column, attribute) for column, attribute in CSV_COLUMNS] for run in streamed(queryset))
    return table_csv_lines([column for column, _ in CSV_COLUMNS], rows)


def row_jsonl_lines(queryset: QuerySet) -> Iterator[str]:
    """The run list as JSONL: one record per run with the CSV's columns, typed."""
    return jsonl(run_row(run) for run in streamed(queryset))
