"""The API's run item (``run_item``): the fields ``serializers.RunSerializer`` declares, built
in one function from the joined rows, and the columns a list of items loads (``RUN_ITEM_COLUMNS``).
A field-by-field pass with three nested serializers per row was most of a list page's time;
tests/api pins both to the same output.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

import orjson
from django.conf import settings
from rest_framework import serializers

from runs.models import SUMMARIES, Run


def permalink(obj: Any) -> str:
    """The object's public page, as citations and the run page write it (SITE_URL + path)."""
    return settings.SITE_URL + obj.get_absolute_url()


def spec_object(run: Run, *path: str) -> dict[str, Any]:
    value: Any = run.spec
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def _summary(run: Run, name: str) -> dict[str, Any]:
    """The object ``SUMMARIES[name]`` of the run's document: from the text the database read
    (``Run.objects.with_summaries``) when the row has it, else from the whole document."""
    if name not in run.__dict__:
        return spec_object(run, *SUMMARIES[name])
    text = run.__dict__[name]
    # orjson reads the same values as json.loads from a stored document: canonical JSON
    # (DESIGN §2) holds no NaN and no integer beyond 2**53, where the two would differ.
    value = orjson.loads(text) if isinstance(text, str) else None
    return value if isinstance(value, dict) else {}


_DATETIME = serializers.DateTimeField()


def _datetime(value: Any) -> str | None:
    if value is None:
        return None
    if value.tzinfo is UTC:  # what the databases return: DRF's answer without its time zone dance
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return _DATETIME.to_representation(value)


def _optional(value: Any, kind: type) -> Any:
    return None if value is None else kind(value)


# The columns run_item reads (with the summaries of Run.objects.with_summaries()): a list loads
# only these. The runs' and joined rows' other columns cost a setattr, and for dates a conversion,
# each: about a quarter of an API page at nine objects of 10 to 40 columns per item.
RUN_ITEM_COLUMNS = (
    *("public_id", "digest", "external_id", "title", "rank", "source_rank", "is_reference", "status"),
    *("evidence_level", "quarantined", "submitter", "primary_statistic", "latency_ns", "observed_at"),
    *("published_at", "source__slug", "benchmark__native_id", "benchmark__title", "benchmark__source__slug"),
    *("group__key", "environment__product", "environment__architecture", "environment__digest"),
    *("protocol__harness_name", "protocol__harness_version", "protocol__family", "protocol__digest"),
    *("implementation__project__slug", "implementation__project__name"),
)


def run_item(run: Run) -> dict[str, Any]:
    """RunSerializer's item for one run: the declared fields, in their order, with DRF's own
    representations (str, int, float, bool, ISO 8601 with "Z"), from the joined rows only."""
    benchmark, environment, protocol = run.benchmark, run.environment, run.protocol
    implementation = run.implementation
    project = implementation.project if implementation is not None else None
    return {
        "id": str(run.public_id),
        "url": permalink(run),
        "digest": str(run.digest),
        "externalId": str(run.external_id),
        "title": str(run.title),
        "source": str(run.source.slug),
        "benchmark": {
            "source": str(benchmark.source.slug),
            "nativeId": str(benchmark.native_id),
            "title": str(benchmark.title),
            "url": permalink(benchmark),
        },
        "comparisonKey": str(run.group.key),
        "rank": _optional(run.rank, int),
        "sourceRank": _optional(run.source_rank, int),
        "isReference": bool(run.is_reference),
        "status": str(run.status),
        "evidenceLevel": str(run.evidence_level),
        "quarantined": bool(run.quarantined),
        "submitter": str(run.submitter),
        "project": None
        if project is None
        else {"slug": str(project.slug), "name": str(project.name), "url": permalink(project)},
        "hardware": {
            "product": str(environment.product),
            "architecture": str(environment.architecture),
            "environmentDigest": str(environment.digest),
        },
        "harness": {
            "name": str(protocol.harness_name),
            "version": str(protocol.harness_version),
            "family": str(protocol.family),
            "protocolDigest": str(protocol.digest),
        },
        "primaryStatistic": str(run.primary_statistic),
        "latencyNs": _optional(run.latency_ns, float),
        "observedAt": _datetime(run.observed_at),
        "publishedAt": _datetime(run.published_at),
        "timing": _summary(run, "timing_json"),
        "metrics": _summary(run, "metrics_json"),
    }
