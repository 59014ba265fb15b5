"""The API's run item (``run_item``): the fields ``serializers.RunSerializer`` declares, built
in one function from the values a list reads (``RUN_ITEM_VALUES``, one dictionary a run) or from
a Run and its joined rows. A field-by-field pass with three nested serializers per row was most
of a list page's time, and building the model instances of a run and its seven joined rows a
fifth of what was left; tests/api pins all three ways to the same output.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from datetime import UTC
from typing import Any

import orjson
from django.conf import settings
from django.urls import get_script_prefix
from rest_framework import serializers

from api.renderers import RawJSON
from kernelindex import links
from kernelindex.gpus import architecture_for
from runs import ranking
from runs.models import Benchmark, ComparisonGroup, Project, Run
from runs.summaries import SUMMARIES


def permalink(obj: Any) -> str:
    """The object's public page, as citations and the run page write it (SITE_URL + path)."""
    return settings.SITE_URL + obj.get_absolute_url()


def spec_object(run: Run, *path: str) -> dict[str, Any]:
    value: Any = run.spec
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def _object(value: Any) -> dict[str, Any]:
    """A summary as an object: JSON text (decoded) or an object already; anything else is {}."""
    if isinstance(value, str):
        # orjson reads the same values as json.loads from a stored document: canonical JSON
        # (DESIGN §2) holds no NaN and no integer beyond 2**53, where the two would differ.
        value = orjson.loads(value)
    return value if isinstance(value, dict) else {}


_DATETIME = serializers.DateTimeField()


def _datetime(value: Any) -> str | None:
    if value is None:
        return None
    if value.tzinfo is UTC:  # what the databases return: DRF's answer without its time zone dance
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return _DATETIME.to_representation(value)


def _utc(value: Any) -> Any:
    """A date for the API's renderer, which writes one in UTC as ``_datetime`` spells it."""
    return value if value is None or value.tzinfo is UTC else _datetime(value)


# The columns run_item reads: a list reads only these. Every other column costs a conversion, for
# dates a parse, on every row.
RUN_ITEM_COLUMNS = (
    *("public_id", "digest", "external_id", "title", "rank", "source_rank", "is_reference", "status"),
    *("evidence_level", "quarantined", "submitter", "primary_statistic", "latency_ns", "observed_at"),
    *("published_at", "source__slug", "benchmark__native_id", "benchmark__title", "benchmark__source__slug"),
    *("group__key", "environment__product", "environment__architecture", "environment__digest"),
    *("protocol__harness_name", "protocol__harness_version", "protocol__family", "protocol__digest"),
    *("implementation__project__slug", "implementation__project__name"),
)


# What a list reads per run (``QuerySet.values``).
RUN_ITEM_VALUES = (*RUN_ITEM_COLUMNS, *SUMMARIES)  # the summaries: JSON text of two objects


# A row of RUN_ITEM_VALUES as the tuple ``_item`` takes, from a values() row.
_VALUES = operator.itemgetter(*RUN_ITEM_VALUES)
_WIDTH = len(RUN_ITEM_VALUES)


def _row(obj: Any, columns: tuple[str, ...] = RUN_ITEM_VALUES) -> tuple[Any, ...]:
    """The values of ``columns`` (values() names) from an object and its joined rows (one run's
    or one group's detail)."""
    row: list[Any] = []
    for column in columns:
        value: Any = obj
        for step in column.split("__"):
            value = None if value is None else getattr(value, step)
        row.append(value)
    return tuple(row)


def run_item(run: Run | dict[str, Any]) -> dict[str, Any]:
    """RunSerializer's item for one run: the declared fields, in their order, with DRF's own
    representations (str, int, float, bool, ISO 8601 with "Z"). ``run`` is a Run with its joined
    rows, or a row of ``RUN_ITEM_VALUES`` (what a list reads: no model instances)."""
    row = _VALUES(run) if isinstance(run, dict) else _row(run)
    return _item(row, _object, _datetime, settings.SITE_URL + get_script_prefix(), {})


def run_items(rows: Sequence[dict[str, Any] | tuple[Any, ...]]) -> list[dict[str, Any]]:
    """``run_item`` of each row, for a response of the API's renderer: a row is a values() row of
    ``RUN_ITEM_VALUES``, or a tuple that starts with those values in that order (a list's first
    page, ``api.pagination``: building 51 dictionaries of 32 values was 7% of that page). The
    summaries go in as the JSON text the database holds (``RawJSON``), not decoded only to be
    encoded again, spelled as the API spells them (``runs.summaries.summaries_of``); a date in
    UTC goes in as it is, for the renderer to write in C."""
    base = settings.SITE_URL + get_script_prefix()  # read once: both are lookups in a proxy
    urls: dict[tuple[str, ...], str] = {}  # a page's runs share a few benchmarks and projects
    return [_item(row if isinstance(row, tuple) else _VALUES(row), _raw, _utc, base, urls) for row in rows]


def _raw(value: Any) -> Any:
    """A summary for the renderer: the JSON text of an object as it is, {} for anything else."""
    if isinstance(value, str):
        return RawJSON(value) if value.startswith("{") else {}
    return value if isinstance(value, dict) else {}


def _item(
    row: tuple[Any, ...],
    summary: Callable[[Any], Any],
    date: Callable[[Any], Any],
    base: str,
    urls: dict[tuple[str, ...], str],
) -> dict[str, Any]:
    """The item of a row of ``RUN_ITEM_VALUES`` (a tuple in that order, unpacked below);
    ``summary`` and ``date``: what a stored object and a date become; ``base``: what goes before
    a page's path segments in a link (SITE_URL and the script prefix); ``urls``: the benchmarks'
    and projects' links so far."""
    (
        public_id,
        digest,
        external_id,
        title,
        rank,
        source_rank,
        is_reference,
        status,
        evidence_level,
        quarantined,
        submitter,
        primary_statistic,
        latency_ns,
        observed_at,
        published_at,
        run_source_slug,
        native_id,
        benchmark_title,
        source_slug,
        group_key,
        product,
        architecture,
        environment_digest,
        harness_name,
        harness_version,
        family,
        protocol_digest,
        project_slug,
        project_name,
        timing,
        metrics,
    ) = row[:_WIDTH]
    if (source_slug, native_id) not in urls:
        urls[source_slug, native_id] = Benchmark.path_of(source_slug, native_id, base)
    if project_slug is not None and (project_slug,) not in urls:
        urls[(project_slug,)] = Project.path_of(project_slug, base)
    return {
        "id": str(public_id),
        "url": Run.path_of(public_id, base),
        "digest": str(digest),
        "externalId": str(external_id),
        "title": str(title),
        "source": str(run_source_slug),
        "benchmark": {
            "source": str(source_slug),
            "nativeId": str(native_id),
            "title": str(benchmark_title),
            "url": urls[source_slug, native_id],
        },
        "comparisonKey": str(group_key),
        "rank": None if rank is None else int(rank),
        "sourceRank": None if source_rank is None else int(source_rank),
        "isReference": bool(is_reference),
        "status": str(status),
        "evidenceLevel": str(evidence_level),
        "quarantined": bool(quarantined),
        "submitter": str(submitter),
        "project": None
        if project_slug is None
        else {"slug": str(project_slug), "name": str(project_name), "url": urls[(project_slug,)]},
        "hardware": {
            "product": str(product),
            "architecture": str(architecture),
            "environmentDigest": str(environment_digest),
        },
        "harness": {
            "name": str(harness_name),
            "version": str(harness_version),
            "family": str(family),
            "protocolDigest": str(protocol_digest),
        },
        "primaryStatistic": str(primary_statistic),
        "latencyNs": None if latency_ns is None else float(latency_ns),
        "observedAt": date(observed_at),
        "publishedAt": date(published_at),
        "timing": summary(timing),
        "metrics": summary(metrics),
    }


# What a groups list reads: GroupSerializer's values, one row a group, no model instances.
GROUP_ITEM_VALUES = (
    "key",
    "source__slug",
    "benchmark__source__slug",
    "benchmark__native_id",
    "benchmark__title",
    "family",
    "hardware_product",
    "harness_name",
    "harness_version",
    "key_document",
    "ranking_metric",
    "ranking_direction",
    "best_per",
)
# GroupListSerializer's: those and the run count (the list's annotation).
GROUP_LIST_VALUES = (*GROUP_ITEM_VALUES, "run_count")
_GROUP_LIST_VALUES = operator.itemgetter(*GROUP_LIST_VALUES)
_GROUP_WIDTH = len(GROUP_ITEM_VALUES)


def group_item(group: ComparisonGroup) -> dict[str, Any]:
    """GroupSerializer's item for one comparison group, the declared fields in their order, from
    the group with its source, benchmark and the benchmark's source joined. DRF's field-by-field
    pass (two nested serializers, 13 fields) was two fifths of a groups list page."""
    return _group_item(_row(group, GROUP_ITEM_VALUES), settings.SITE_URL + get_script_prefix())


def group_items(rows: Sequence[dict[str, Any] | tuple[Any, ...]]) -> list[dict[str, Any]]:
    """GroupListSerializer's items (each group's item, then its run count) of a list's rows:
    values() rows of ``GROUP_LIST_VALUES``, or tuples that start with those values in that order
    (a first page, ``api.pagination``). The model instances of each group and its three joined
    rows, and compiling the list's query, were about half of a groups list."""
    base = settings.SITE_URL + get_script_prefix()  # read once: both are lookups in a proxy
    items = []
    for row in rows:
        values = row if isinstance(row, tuple) else _GROUP_LIST_VALUES(row)
        item = _group_item(values, base)
        item["runCount"] = int(values[_GROUP_WIDTH])
        items.append(item)
    return items


def _group_item(row: tuple[Any, ...], base: str) -> dict[str, Any]:
    """The item of a row of ``GROUP_ITEM_VALUES`` (a tuple that starts with them, in that order);
    ``base``: what goes before a page's path segments in a link (SITE_URL and the script prefix)."""
    (
        key,
        source_slug,
        benchmark_source,
        native_id,
        benchmark_title,
        family,
        hardware_product,
        harness_name,
        harness_version,
        key_document,
        metric,
        direction,
        best_per,
    ) = row[:_GROUP_WIDTH]
    return {
        "key": str(key),
        "url": links.page_path("groups", key, prefix=base),
        "source": str(source_slug),
        "benchmark": {
            "source": str(benchmark_source),
            "nativeId": str(native_id),
            "title": str(benchmark_title),
            "url": Benchmark.path_of(benchmark_source, native_id, base),
        },
        "family": str(family),
        "hardwareProduct": str(hardware_product),
        "architecture": architecture_for(hardware_product),
        "harnessName": str(harness_name),
        "harnessVersion": str(harness_version),
        "keyDocument": orjson.loads(key_document),  # canonical JSON (see _object)
        "ranking": {
            "metric": str(metric),
            "direction": str(direction),
            "bestPer": str(best_per),
            "description": ranking.RankingRule(metric, direction, best_per).description,
        },
    }
