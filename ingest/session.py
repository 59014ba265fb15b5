"""One import session: the documents and run rows a batch of verified bundles becomes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from django.db import DEFAULT_DB_ALIAS
from django.utils import timezone

from ingest.lookups import Lookups
from ingest.records import A_DATA_QUALITY
from ingest.rows import insert_rows
from kernelindex import canonical
from kernelindex.gpus import architecture_for, normalise_product
from runs.identity import benchmark_target, evidence_level_for
from runs.manifests import (
    A_PROVENANCE_URL,
    A_PUBLIC_REASON,
    A_PUBLISHED,
    A_QUARANTINED,
    A_RETRIEVED_AT,
    A_SOURCE_RANK,
    A_VISIBILITY,
    INT_MAX,
    INT_MIN,
    ManifestError,
    VerifiedBundle,
    check_provenance_url,
    parse_timestamp,
)
from runs.models import Environment, Implementation, Protocol, RunStatus, Visibility, Workload
from runs.summaries import summaries_of

_STATUS_MAP = {
    "passed": RunStatus.PASSED,
    "failed": RunStatus.FAILED,
    "error": RunStatus.ERROR,
    "unknown": RunStatus.UNKNOWN,
}


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


class ImportSession(Lookups):
    """What one call of ``import_bundles`` knows: who imports and how far annotations are
    trusted, the runs it will create (written at its end) and the groups it touched."""

    def __init__(
        self,
        *,
        evidence_level: str,
        trust_annotations: bool,
        actor: Any,
        actor_label: str,
        reason: str,
        describe: Callable[[VerifiedBundle], tuple[str, str]] | None = None,
    ) -> None:
        super().__init__()
        self.evidence_level = evidence_level
        self.trust_annotations = trust_annotations
        self.actor = actor
        self.actor_label = actor_label
        self.reason = reason
        self._describe = describe
        # Runs created by this import, written at its end: identity → (row, (label, reason)).
        self.pending: dict[str, tuple[dict[str, Any], tuple[str, str]]] = {}
        self.pending_public_ids: set[str] = set()
        self.touched_groups: set[int] = set()
        # The groups whose new runs are written (``ingest.engine._prepare_pending``).
        self.written_groups: set[int] = set()
        # The environments and implementations that changed runs had before (runs.counts.refresh_left).
        self.left_environments: set[int] = set()
        self.left_implementations: set[int | None] = set()
        self.now = timezone.now()
        # Annotation values already checked (``_once``).
        self._checked: dict[tuple[str, str], Any] = {}

    def describe(self, bundle: VerifiedBundle) -> tuple[str, str]:
        """(actor label, reason) recorded on the revision this bundle writes."""
        if self._describe is None:
            return self.actor_label[:300], self.reason
        label, reason = self._describe(bundle)
        return label[:300], reason

    # -- documents ------------------------------------------------------------------------
    def documents(self, bundles: list[VerifiedBundle]) -> dict[str, dict[str, Any]]:
        """Upsert protocol/environment/workload/implementation rows; role → digest → row."""
        found: dict[str, dict[str, Any]] = {}
        for role, model in (
            ("protocol", Protocol),
            ("environment", Environment),
            ("workload", Workload),
            ("implementation", Implementation),
        ):
            wanted = {b.digests[role]: b for b in bundles if role in b.docs}
            # Declared documents the bundle does not carry may already be in the index.
            lookup = set(wanted) | {b.declared[role] for b in bundles if role in b.declared}
            # Runs only need the row's pk and digest; the document text stays in the database.
            columns = ("pk", "digest", "submitter") if role == "implementation" else ("pk", "digest")
            existing = {obj.digest: obj for obj in model.objects.filter(digest__any=lookup).only(*columns)}
            missing = [digest for digest in wanted if digest not in existing]
            if role == "implementation" and missing:
                self.prefetch_projects(str(wanted[digest].docs[role]["spec"].get("project", "")) for digest in missing)
            # Column values, not model instances (building 100,000 implementations was a tenth of
            # an import's own CPU); the runs get what the lookup above gives: pk, digest (and
            # submitter), as loaded rows.
            rows = [self._document_row(role, digest, wanted[digest]) for digest in missing]
            names = [model._meta.pk.attname, *columns[1:]]
            for row, pk in zip(rows, insert_rows(model, rows), strict=True):
                values = [pk, *(row[name] for name in columns[1:])]
                existing[row["digest"]] = model.from_db(DEFAULT_DB_ALIAS, names, values)
            found[role] = existing
        return found

    def _document_row(self, role: str, digest: str, bundle: VerifiedBundle) -> dict[str, Any]:
        """The columns of a new document row (``insert_rows``)."""
        doc = bundle.docs[role]
        metadata = doc.get("metadata", {})
        spec = doc["spec"]
        row = {
            "digest": digest,
            "name": str(metadata.get("name", ""))[:200],
            "title": str(metadata.get("title", ""))[:300],
            "document": bundle.texts.get(role) or canonical.dumps_str(doc),
        }
        if role == "protocol":
            harness = spec.get("harness") if isinstance(spec.get("harness"), dict) else {}
            measurement = spec.get("measurement") if isinstance(spec.get("measurement"), dict) else {}
            row.update(
                harness_name=str(harness.get("name", ""))[:200],
                harness_version=str(harness.get("version", ""))[:100],
                family=str((spec.get("comparability") or {}).get("family", ""))[:100],
                timer=str(measurement.get("timer", ""))[:100],
                primary_statistic=str(measurement.get("primaryStatistic", ""))[:50],
            )
        elif role == "environment":
            hardware = spec.get("hardware") if isinstance(spec.get("hardware"), dict) else {}
            product = normalise_product(str(hardware.get("product", "")))
            row.update(
                vendor=str(hardware.get("vendor", ""))[:100],
                product=product,
                architecture=str(hardware.get("architecture") or architecture_for(product))[:50],
            )
        elif role == "workload":
            target = spec.get("benchmark") if isinstance(spec.get("benchmark"), dict) else {}
            benchmark = None
            if target.get("source") and target.get("nativeId"):
                benchmark = self.benchmark(self.source(str(target["source"]), bundle.origin), str(target["nativeId"]))
            cases = spec.get("cases") if isinstance(spec.get("cases"), list) else []
            row.update(benchmark_id=benchmark.pk if benchmark else None, case_count=len(cases))
        else:
            project = self.project(str(spec.get("project", "")))
            row.update(
                project_id=project.pk if project else None,
                submitter=str(spec.get("submitter", ""))[:300],
                revision=str(spec.get("revision", ""))[:300],
            )
        return row

    def _once(self, kind: str, value: Any, check: Callable[[], Any]) -> Any:
        """``check()`` of a string annotation, once per value in this import: the rows of one file
        share their provenance. A refused value raises every time, naming its own row."""
        if not isinstance(value, str):
            return check()
        key = (kind, value)
        if key not in self._checked:
            self._checked[key] = check()
        return self._checked[key]

    # -- runs -----------------------------------------------------------------------------
    def run_fields(self, bundle: VerifiedBundle, docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        spec = bundle.run_spec
        native = spec["sourceNative"]
        origin = bundle.origin
        source = self.source(native["source"], origin)
        benchmark_slug, benchmark_id = benchmark_target(bundle)
        benchmark = self.benchmark(self.source(benchmark_slug, origin), benchmark_id)
        group = self.group(bundle, source, benchmark)
        metrics = native.get("metrics", {})
        timing = spec["timing"]
        statistic = str(timing.get("primaryStatistic", ""))
        latencies = timing.get("latencyNs", {})
        latency = latencies.get(statistic) if statistic else None
        if latency is None and latencies:
            statistic, latency = next(iter(latencies.items()))
        status = _STATUS_MAP.get(str(spec["status"]).lower())
        if status is None:
            raise ManifestError(f"{origin}: run spec.status {spec['status']!r} is not one of {sorted(_STATUS_MAP)}")
        annotations = bundle.annotations
        evidence = evidence_level_for(bundle, default=self.evidence_level, trust_annotations=self.trust_annotations)
        implementation = docs["implementation"].get(bundle.declared.get("implementation", ""))
        submitter = str(native.get("submitter") or (implementation.submitter if implementation else ""))
        metadata = bundle.run.get("metadata", {})
        published = (
            parse_timestamp(annotations.get(A_PUBLISHED), where=f"{origin}: {A_PUBLISHED}")
            if self.trust_annotations
            else None
        )
        # Every path (importers' snapshots and sidecars, trusted exports) passes here.
        provenance = self._once(
            "provenance", annotations.get(A_PROVENANCE_URL, ""), lambda: check_provenance_url(annotations, origin)
        )
        source_rank = annotations.get(A_SOURCE_RANK)
        if isinstance(source_rank, int) and not isinstance(source_rank, bool) and not INT_MIN <= source_rank <= INT_MAX:
            raise ManifestError(f"{origin}: {A_SOURCE_RANK} must be an integer from {INT_MIN} to {INT_MAX}")
        moderation = moderation_from_annotations(annotations, origin) if self.trust_annotations else {}
        document = bundle.texts.get("run") or canonical.dumps_str(bundle.run)
        retrieved = annotations.get(A_RETRIEVED_AT)
        return {
            "digest": bundle.digests["run"],
            "document": document,
            # From the canonical text, as a list has always shown them (1.0 is 1 there).
            **summaries_of(orjson.loads(document).get("spec")),
            "name": str(metadata.get("name", ""))[:200],
            "title": str(metadata.get("title", ""))[:500],
            "labels": metadata.get("labels", {}),
            "source": source,
            "benchmark": benchmark,
            "group": group,
            "protocol": docs["protocol"][bundle.digests["protocol"]],
            "environment": docs["environment"][bundle.digests["environment"]],
            # Only the exact document the run declares; pages fall back to the benchmark's.
            "workload": docs["workload"].get(bundle.declared.get("workload", "")),
            "implementation": implementation,
            "protocol_digest": bundle.declared["protocol"],
            "environment_digest": bundle.declared["environment"],
            "workload_digest": bundle.declared.get("workload", ""),
            "implementation_digest": bundle.declared.get("implementation", ""),
            "external_id": native["externalId"][:300],
            "submitter": submitter[:300],
            "status": status,
            "status_detail": str(spec.get("statusDetail", ""))[:200],
            "evidence_level": evidence,
            "is_reference": bool(native.get("isReference", False)),
            "primary_statistic": statistic[:50],
            "latency_ns": _as_float(latency),
            "sol_score": _as_float(metrics.get("sol_score")),
            "avg_speedup": _as_float(metrics.get("avg_speedup")),
            "fast_1_count": _as_int(metrics.get("fast_1_count")),
            "fast_1_total": _as_int(metrics.get("fast_1_total")),
            "source_rank": source_rank if isinstance(source_rank, int) and not isinstance(source_rank, bool) else None,
            "observed_at": parse_timestamp(spec.get("observedAt"), where=f"{origin}: run spec.observedAt"),
            "published_at_hint": published,
            "moderation_hint": moderation,
            "provenance_url": provenance,
            "retrieved_at": self._once(
                "retrieved", retrieved, lambda: parse_timestamp(retrieved, where=f"{origin}: {A_RETRIEVED_AT}")
            ),
            "data_quality_note": str(annotations.get(A_DATA_QUALITY) or ""),
        }


def moderation_from_annotations(annotations: dict[str, Any], origin: str) -> dict[str, Any]:
    """The moderation columns a trusted export states (``manifests.run_annotations`` writes
    them only when not the default); {} when it states none. Wrong types are a clear error."""
    where = f"{origin}: " if origin else ""
    state: dict[str, Any] = {}
    if A_VISIBILITY in annotations:
        visibility = annotations[A_VISIBILITY]
        if visibility not in Visibility.values:
            raise ManifestError(f"{where}{A_VISIBILITY} is {visibility!r}, expected one of {Visibility.values}")
        state["visibility"] = visibility
    if A_QUARANTINED in annotations:
        quarantined = annotations[A_QUARANTINED]
        if not isinstance(quarantined, bool):
            raise ManifestError(f"{where}{A_QUARANTINED} must be true or false, not {quarantined!r}")
        state["quarantined"] = quarantined
    if A_PUBLIC_REASON in annotations:
        reason = annotations[A_PUBLIC_REASON]
        if not isinstance(reason, str):
            raise ManifestError(f"{where}{A_PUBLIC_REASON} must be a string, not {reason!r}")
        state["public_reason"] = reason
    return state
