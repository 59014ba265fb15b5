"""Canonical manifest bundles (DESIGN §2): structure checks, digest verification, export.

A bundle is ``{"run": doc, "protocol": doc, "environment": doc[, "workload": doc]
[, "implementation": doc]}``. Every path into the index — source importers, ``manage.py
import`` of bundles, API submissions, reruns — builds or receives such a bundle and hands it to
``ingest.engine.import_bundles``; nothing else writes runs.

KernelIndex's own facts about a run that are not part of what was measured (evidence level,
provenance, the rank the source published, the first publication date, and moderation state:
visibility, quarantine and the public reason, written only when not the default) travel in
``run.metadata.annotations`` under ``kernelindex.dev/…`` keys: metadata is outside the digest,
so exporting them keeps digests intact and makes export → import → export byte-identical.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from kernelindex import canonical, links

KINDS = {
    "run": "BenchmarkRun",
    "protocol": "BenchmarkProtocol",
    "environment": "ExecutionEnvironment",
    "workload": "Workload",
    "implementation": "Implementation",
}
REQUIRED = ("run", "protocol", "environment")
DIGEST_FIELDS = {
    "protocol": "protocolDigest",
    "environment": "environmentDigest",
    "workload": "workloadDigest",
    "implementation": "implementationDigest",
}
ANNOTATION_PREFIX = "kernelindex.dev/"
A_EVIDENCE = ANNOTATION_PREFIX + "evidence-level"
A_PUBLISHED = ANNOTATION_PREFIX + "published-at"
A_PROVENANCE_URL = ANNOTATION_PREFIX + "provenance-url"
A_RETRIEVED_AT = ANNOTATION_PREFIX + "retrieved-at"
A_SOURCE_RANK = ANNOTATION_PREFIX + "source-rank"
# Moderation state, written only when it differs from the default (published, not
# quarantined, no public reason), so exports of untouched runs stay as they were.
A_VISIBILITY = ANNOTATION_PREFIX + "visibility"
A_QUARANTINED = ANNOTATION_PREFIX + "quarantined"
A_PUBLIC_REASON = ANNOTATION_PREFIX + "public-reason"


# Integer columns are 32-bit on PostgreSQL: the application keeps every database to that range.
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
INT_METRICS = ("fast_1_count", "fast_1_total")
# Spec fields the index reads as objects.
OBJECT_FIELDS = (
    ("protocol", "harness"),
    ("protocol", "measurement"),
    ("protocol", "comparability"),
    ("environment", "hardware"),
    ("environment", "software"),
    ("workload", "benchmark"),
)
# Strings that become columns or a run's identity, and their longest allowed length (the column's).
STRING_LIMITS = (
    ("run", "sourceNative.source", 64),
    ("run", "sourceNative.benchmark", 200),
    ("run", "sourceNative.externalId", 300),
    ("run", "sourceNative.submitter", 300),
    ("run", "status", 20),
    ("run", "statusDetail", 200),
    ("run", "timing.primaryStatistic", 50),
    ("protocol", "harness.name", 200),
    ("protocol", "harness.version", 100),
    ("protocol", "comparability.family", 100),
    ("protocol", "measurement.timer", 100),
    ("protocol", "measurement.primaryStatistic", 50),
    ("environment", "hardware.vendor", 100),
    ("environment", "hardware.product", 200),
    ("environment", "hardware.architecture", 50),
    ("workload", "benchmark.source", 64),
    ("workload", "benchmark.nativeId", 200),
    ("implementation", "project", 300),
    ("implementation", "submitter", 300),
    ("implementation", "revision", 300),
)


class ManifestError(ValueError):
    """A bundle that cannot be imported. The message names the document and the problem."""


@dataclass
class VerifiedBundle:
    """A bundle whose structure and declared digests have been checked."""

    docs: dict[str, dict[str, Any]]  # role → document, kernelindex annotations stripped
    digests: dict[str, str]  # role → computed digest (run included)
    declared: dict[str, str]  # role → digest the run declares
    annotations: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    # Canonical text of documents, when whoever built the bundle already serialised them
    # (ingest.records.make_bundle); saves serialising each run twice.
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def run(self) -> dict[str, Any]:
        return self.docs["run"]

    @property
    def run_spec(self) -> dict[str, Any]:
        return self.docs["run"]["spec"]


def _require(condition: bool, origin: str, message: str) -> None:
    if not condition:
        raise ManifestError(f"{origin}: {message}" if origin else message)


def _check_document(role: str, doc: Any, origin: str) -> None:
    where = f"{role} document"
    _require(isinstance(doc, dict), origin, f"{where} must be a JSON object, not {type(doc).__name__}")
    unknown = set(doc) - {"apiVersion", "kind", "metadata", "spec"}
    _require(not unknown, origin, f"{where} has unknown top-level fields {sorted(unknown)}")
    _require(
        doc.get("apiVersion") == canonical.API_VERSION,
        origin,
        f"{where} apiVersion is {doc.get('apiVersion')!r}, expected {canonical.API_VERSION!r}",
    )
    _require(
        doc.get("kind") == KINDS[role],
        origin,
        f"{where} kind is {doc.get('kind')!r}, expected {KINDS[role]!r}",
    )
    _require(isinstance(doc.get("spec"), dict), origin, f"{where} is missing its spec object")
    metadata = doc.get("metadata", {})
    _require(isinstance(metadata, dict), origin, f"{where} metadata must be an object")
    for key in ("name", "title"):
        _require(isinstance(metadata.get(key, ""), str), origin, f"{where} metadata.{key} must be a string")
    for key in ("labels", "annotations"):
        _require(isinstance(metadata.get(key, {}), dict), origin, f"{where} metadata.{key} must be an object")


def _check_run_spec(spec: dict[str, Any], origin: str) -> None:
    native = spec.get("sourceNative")
    _require(isinstance(native, dict), origin, "run spec.sourceNative must be an object")
    for key in ("source", "benchmark", "externalId"):
        value = native.get(key)
        _require(
            isinstance(value, str) and value.strip() != "",
            origin,
            f"run spec.sourceNative.{key} must be a non-empty string",
        )
    _require(isinstance(native.get("metrics", {}), dict), origin, "run spec.sourceNative.metrics must be an object")
    _require(isinstance(spec.get("status"), str), origin, "run spec.status must be a string")
    timing = spec.get("timing")
    _require(isinstance(timing, dict), origin, "run spec.timing must be an object")
    latency = timing.get("latencyNs", {})
    _require(isinstance(latency, dict), origin, "run spec.timing.latencyNs must be an object")
    for stat, value in latency.items():
        _require(
            isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
            origin,
            f"run spec.timing.latencyNs.{stat} must be a non-negative number, not {value!r}",
        )
    observed = spec.get("observedAt")
    _require(observed is None or isinstance(observed, str), origin, "run spec.observedAt must be a string")
    parse_timestamp(observed, where=f"{origin}: run spec.observedAt" if origin else "run spec.observedAt")
    metrics = native.get("metrics", {})
    for key in INT_METRICS:
        value = metrics.get(key)
        _require(
            not isinstance(value, int) or isinstance(value, bool) or INT_MIN <= value <= INT_MAX,
            origin,
            f"run spec.sourceNative.metrics.{key} must be an integer from {INT_MIN} to {INT_MAX}, not {value!r}",
        )
    for role, key in DIGEST_FIELDS.items():
        value = spec.get(key)
        if role in REQUIRED:
            _require(isinstance(value, str), origin, f"run spec.{key} is missing")
        if value is not None:
            _require(
                isinstance(value, str) and value.startswith(canonical.DIGEST_PREFIX) and len(value) == 71,
                origin,
                f"run spec.{key} must be 'sha256:' followed by 64 hex digits, not {value!r}",
            )


# Keys whose string values are links wherever they appear in a document (``spec.artifacts[].url``,
# a download link…): each must be an http(s) URL (kernelindex.links), or empty.
_URL_KEY = re.compile(r"^(url|uri|href|link)$|(Url|URL|Uri|URI|Href|_url)$")


def _check_urls(value: Any, path: str, origin: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}"
            if isinstance(item, str) and item and _URL_KEY.search(key):
                try:
                    links.http_url(item, field=where)
                except links.UnsafeURL as error:
                    raise ManifestError(f"{origin}: {error}" if origin else str(error)) from None
            else:
                _check_urls(item, where, origin)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_urls(item, f"{path}[{index}]", origin)


def check_provenance_url(annotations: dict[str, Any], origin: str) -> str:
    """The provenance URL annotation ("" when absent); anything but an http(s) URL is refused."""
    value = annotations.get(A_PROVENANCE_URL, "")
    if value == "":
        return ""
    try:
        return links.http_url(value, field=f"run metadata.annotations.{A_PROVENANCE_URL}")
    except links.UnsafeURL as error:
        raise ManifestError(f"{origin}: {error}" if origin else str(error)) from None


def _check_shapes(docs: dict[str, dict[str, Any]], origin: str) -> None:
    """Objects where the index reads fields from objects; strings no longer than their columns.

    The same limits on every database: SQLite would store a 10 MB externalId that PostgreSQL's
    index refuses, so a site could not move from one to the other.
    """
    for role, key in OBJECT_FIELDS:
        if role in docs and key in docs[role]["spec"]:
            value = docs[role]["spec"][key]
            _require(
                isinstance(value, dict),
                origin,
                f"{role} spec.{key} must be an object, not {type(value).__name__}",
            )
    for role, path, limit in STRING_LIMITS:
        if role not in docs:
            continue
        value: Any = docs[role]["spec"]
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        _require(isinstance(value, str), origin, f"{role} spec.{path} must be a string, not {type(value).__name__}")
        _require(
            len(value) <= limit,
            origin,
            f"{role} spec.{path} must be at most {limit} characters long, not {len(value)}",
        )


def _check_native_ids(docs: dict[str, dict[str, Any]], origin: str) -> None:
    """Benchmark native ids become paths: only the safe set of ``kernelindex.links``."""
    named = [("run spec.sourceNative.benchmark", docs["run"]["spec"]["sourceNative"]["benchmark"])]
    target = docs.get("workload", {}).get("spec", {}).get("benchmark")
    if isinstance(target, dict) and target.get("nativeId") is not None:
        named.append(("workload spec.benchmark.nativeId", target["nativeId"]))
    for where, value in named:
        why = links.native_id_problem(value)
        _require(why is None, origin, f"{where} {why}")


def parse_timestamp(value: Any, *, where: str) -> datetime | None:
    """ISO 8601 → aware UTC datetime (None for None); a timestamp without a timezone is UTC.

    A date that does not exist (30 February) or that leaves the years 1–9999 once moved to UTC
    (``0001-01-01T00:00+05:00``) is a ManifestError naming ``where``, never a crash later.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ManifestError(f"{where} must be an ISO 8601 string, not {value!r}")
    shown = value if len(value) <= 80 else value[:80] + "…"
    try:
        parsed = parse_datetime(value[:-1] + "+00:00" if value.endswith("Z") else value)
        if parsed is not None:
            return (parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError) as error:
        raise ManifestError(
            f"{where} is not a valid timestamp in the years 1–9999 (UTC): {shown!r} ({error})"
        ) from None
    raise ManifestError(f"{where} is not an ISO 8601 timestamp: {shown!r}")


def bundle_verify(bundle: Any, *, origin: str = "") -> VerifiedBundle:
    """Check a bundle's structure and verify every declared digest whose document it carries.

    A mismatch names the document and both digests. Declared digests of documents the bundle
    does not carry (workload, implementation) are kept as declared.
    """
    _require(isinstance(bundle, dict), origin, f"a bundle must be a JSON object, not {type(bundle).__name__}")
    unknown = set(bundle) - set(KINDS)
    _require(not unknown, origin, f"unknown bundle entries {sorted(unknown)}; expected {sorted(KINDS)}")
    for role in REQUIRED:
        _require(role in bundle, origin, f"the bundle has no {role} document")
    try:
        canonical.check(bundle)
    except canonical.CanonicalError as error:
        raise ManifestError(f"{origin}: {error}" if origin else str(error)) from None
    docs: dict[str, dict[str, Any]] = {}
    annotations: dict[str, Any] = {}
    for role, doc in bundle.items():
        _check_document(role, doc, origin)
        docs[role] = doc
    # Strip KernelIndex annotations from the run: they are ours, not the source's.
    run = docs["run"]
    metadata = dict(run.get("metadata", {}))
    run_annotations = dict(metadata.get("annotations", {}))
    for key in list(run_annotations):
        if key.startswith(ANNOTATION_PREFIX):
            annotations[key] = run_annotations.pop(key)
    if "annotations" in metadata:
        if run_annotations:
            metadata["annotations"] = run_annotations
        else:
            del metadata["annotations"]
    docs["run"] = {**run, "metadata": metadata} if "metadata" in run else run
    _check_shapes(docs, origin)
    _check_run_spec(docs["run"]["spec"], origin)
    _check_native_ids(docs, origin)
    for role, doc in docs.items():
        _check_urls(doc["spec"], f"{role} spec", origin)
    check_provenance_url(annotations, origin)

    digests = {role: canonical.digest_of(doc) for role, doc in docs.items()}
    spec = docs["run"]["spec"]
    declared = {role: spec[key] for role, key in DIGEST_FIELDS.items() if spec.get(key)}
    for role, declared_digest in declared.items():
        if role in digests and digests[role] != declared_digest:
            raise ManifestError(
                f"{origin + ': ' if origin else ''}digest mismatch for the {role} document "
                f"({KINDS[role]} {docs[role].get('metadata', {}).get('name', '')!r}): "
                f"the run declares {spec[DIGEST_FIELDS[role]]}, the document hashes to {digests[role]}"
            )
    for role in docs:
        if role != "run" and role not in declared:
            raise ManifestError(
                f"{origin + ': ' if origin else ''}the bundle carries a {role} document "
                f"but the run declares no {DIGEST_FIELDS[role]}"
            )
    return VerifiedBundle(docs=docs, digests=digests, declared=declared, annotations=annotations, origin=origin)


def bundle_export(run: Any, *, full: bool = True, moderation: bool = True) -> dict[str, Any]:
    """The bundle of a run as stored (canonical documents), with KernelIndex annotations.

    ``full`` adds the workload and implementation documents when the index has them.
    ``moderation=False`` leaves out the moderation state, for a body that only the run's
    digest and its import facts determine (the JSON twin, whose ETag is the digest).
    """
    import json

    run_doc = json.loads(run.document)
    metadata = dict(run_doc.get("metadata", {}))
    annotations = dict(metadata.get("annotations", {}))
    annotations.update(run_annotations(run, moderation=moderation))
    metadata["annotations"] = annotations
    run_doc["metadata"] = metadata
    bundle: dict[str, Any] = {
        "run": run_doc,
        "protocol": json.loads(run.protocol.document),
        "environment": json.loads(run.environment.document),
    }
    if full:
        if run.workload_id and run.workload.digest == run.workload_digest:
            bundle["workload"] = json.loads(run.workload.document)
        if run.implementation_id and run.implementation.digest == run.implementation_digest:
            bundle["implementation"] = json.loads(run.implementation.document)
    return bundle


def run_annotations(run: Any, *, moderation: bool = True) -> dict[str, Any]:
    values: dict[str, Any] = {
        A_EVIDENCE: run.evidence_level,
        A_PUBLISHED: canonical_time(run.published_at),
    }
    if run.provenance_url:
        values[A_PROVENANCE_URL] = run.provenance_url
    if run.retrieved_at:
        values[A_RETRIEVED_AT] = canonical_time(run.retrieved_at)
    if run.source_rank is not None:
        values[A_SOURCE_RANK] = run.source_rank
    if not moderation:
        return values
    if run.visibility != "published":
        values[A_VISIBILITY] = run.visibility
    if run.quarantined:
        values[A_QUARANTINED] = True
    if run.public_reason:
        values[A_PUBLIC_REASON] = run.public_reason
    return values


def canonical_time(value: Any) -> str:
    """UTC, ISO 8601 with milliseconds and Z, the way the reference writes observedAt."""

    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def display_bundle(run: Any) -> dict[str, Any]:
    """The run page's "Canonical manifest": {run, protocol, environment} as stored (the
    documents the page has parsed already, read-only)."""
    return {"run": run.doc, "protocol": run.protocol.doc, "environment": run.environment.doc}
