"""Streamed bulk exports of a filtered run list: CSV, JSONL of API run items, and JSONL of
canonical manifest bundles (the lines ``manage.py export`` writes, so a download re-imports
with ``manage.py import`` and keeps every digest).

Each export iterates the QuerySet with ``.iterator()`` and yields one line at a time, so memory
stays flat however many runs match; the rows come in chunks from one query.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from api.serializers import RunSerializer, permalink
from ingest.pipeline import export_lines
from kernelindex import spreadsheets
from runs.models import Run

CHUNK = 2000
JSONL = "application/x-ndjson"

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


def _csv_value(run: Run, column: str, attribute: str | None) -> Any:
    if attribute is not None:
        value = getattr(run, attribute)
    elif column == "url":
        value = permalink(run)
    elif column == "source":
        value = run.source.slug
    elif column == "benchmark":
        value = run.benchmark.native_id
    elif column == "comparisonKey":
        value = run.group.key
    elif column == "project":
        project = run.implementation.project if run.implementation else None
        value = project.name if project else ""
    elif column == "gpu":
        value = run.environment.product
    elif column == "architecture":
        value = run.environment.architecture
    elif column == "harness":
        value = run.group.harness_name
    elif column == "harnessVersion":
        value = run.group.harness_version
    elif column in {"observedAt", "publishedAt"}:
        moment = run.observed_at if column == "observedAt" else run.published_at
        value = moment.astimezone(UTC).isoformat().replace("+00:00", "Z") if moment else ""
    else:  # pragma: no cover - every column is listed above
        raise KeyError(column)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def csv_lines(queryset: QuerySet) -> Iterator[str]:
    buffer = io.StringIO()
    # RFC 4180 line ends: with "\n" alone, csv leaves a cell holding "\r" unquoted, and readers
    # split the row there.
    writer = csv.writer(buffer, lineterminator="\r\n")

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)
        return text

    # Every cell through kernelindex.spreadsheets: any text column may start like a formula.
    writer.writerow(spreadsheets.row(column for column, _ in CSV_COLUMNS))
    yield flush()
    for run in queryset.iterator(chunk_size=CHUNK):
        writer.writerow(spreadsheets.row(_csv_value(run, column, attribute) for column, attribute in CSV_COLUMNS))
        yield flush()


def jsonl_lines(queryset: QuerySet) -> Iterator[str]:
    for run in queryset.iterator(chunk_size=CHUNK):
        yield json.dumps(RunSerializer(run).data, ensure_ascii=False, separators=(",", ":")) + "\n"


def bundle_lines(queryset: QuerySet) -> Iterator[str]:
    """The same canonical lines as ``manage.py export`` (public-id order)."""
    return export_lines(queryset)


def streamed(lines: Iterator[str], *, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse((line.encode("utf-8") for line in lines), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
