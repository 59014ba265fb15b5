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

from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from kernelindex import canonical

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
    _check_run_spec(docs["run"]["spec"], origin)

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
    """The run page's "Canonical manifest": {run, protocol, environment} as stored."""
    import json

    return {
        "run": json.loads(run.document),
        "protocol": json.loads(run.protocol.document),
        "environment": json.loads(run.environment.document),
    }
