"""Streamed bulk exports of a filtered run list: CSV, JSONL of API run items, and JSONL of
canonical manifest bundles (the lines ``manage.py export`` writes, so a download re-imports
with ``manage.py import`` and keeps every digest).

Each export iterates the QuerySet through ``runs.exports.streamed`` and yields one line at a time, so memory
stays flat however many runs match; the rows come in chunks from one query.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from api.serializers import RunSerializer
from ingest.pipeline import export_lines
from runs import exports as run_exports

CHUNK = run_exports.CHUNK

JSONL = "application/x-ndjson"

# The CSV writer is shared with the pages' downloads (runs.exports); the API adds its own JSONL
# of run items and of canonical bundles.
csv_lines = run_exports.csv_lines


def jsonl_lines(queryset: QuerySet) -> Iterator[str]:
    for run in run_exports.streamed(queryset):
        yield json.dumps(RunSerializer(run).data, ensure_ascii=False, separators=(",", ":")) + "\n"


def bundle_lines(queryset: QuerySet) -> Iterator[str]:
    """The same canonical lines as ``manage.py export`` (public-id order)."""
    return export_lines(queryset)


def streamed(lines: Iterator[str], *, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse((line.encode("utf-8") for line in lines), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
