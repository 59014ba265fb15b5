"""Writes to the run index. Every run enters through ``bundles_import``.

Imports are atomic (one transaction for a whole call) and idempotent: a run is found again by
its identity (the source's own identity of the run); an unchanged run is left alone, a changed
one gets a new RunRevision recording who changed it and why, never a duplicate row.

The work is done in batches with a fixed number of queries per batch (lookups with ``__in``,
``bulk_create``/``bulk_update``), so importing 100,000 runs does not cost 100,000 round trips.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from kernelindex import canonical
from runs import ranking
from runs.manifests import (
    A_EVIDENCE,
    A_PROVENANCE_URL,
    A_PUBLISHED,
    A_RETRIEVED_AT,
    A_SOURCE_RANK,
    ManifestError,
    VerifiedBundle,
)
from runs.models import (
    Benchmark,
    ComparisonGroup,
    Environment,
    EvidenceLevel,
    Implementation,
    Project,
    Protocol,
    Run,
    RunRevision,
    RunStatus,
    Source,
    Workload,
)

KNOWN_SOURCES = {
    "sol-execbench": ("NVIDIA SOL-ExecBench", "https://research.nvidia.com/benchmarks/sol-execbench/"),
    "kernelbench": ("KernelBench", "https://github.com/ScalingIntelligence/KernelBench"),
    "gpu-mode": ("GPU MODE", "https://www.gpumode.com/"),
    "kernelindex": ("KernelIndex", ""),
}

# Words whose case a humanised title must keep.
_TITLE_WORDS = {
    "kv": "KV",
    "rope": "RoPE",
    "gqa": "GQA",
    "mqa": "MQA",
    "mla": "MLA",
    "rms": "RMS",
    "rmsnorm": "RMSNorm",
    "layernorm": "LayerNorm",
    "gemm": "GEMM",
    "gemv": "GEMV",
    "moe": "MoE",
    "fp8": "FP8",
    "fp4": "FP4",
    "bf16": "BF16",
    "fp16": "FP16",
    "fp32": "FP32",
    "int8": "INT8",
    "mlp": "MLP",
    "relu": "ReLU",
    "gelu": "GELU",
    "silu": "SiLU",
    "swiglu": "SwiGLU",
    "qk": "QK",
    "ssm": "SSM",
    "lstm": "LSTM",
    "gru": "GRU",
    "rnn": "RNN",
    "conv": "conv",
    "3d": "3D",
    "2d": "2D",
    "1d": "1D",
    "nvfp4": "NVFP4",
    "mxfp4": "MXFP4",
    "mxfp8": "MXFP8",
    "vgg": "VGG",
    "resnet": "ResNet",
}

_STATUS_MAP = {
    "passed": RunStatus.PASSED,
    "failed": RunStatus.FAILED,
    "error": RunStatus.ERROR,
    "unknown": RunStatus.UNKNOWN,
}


def humanize_benchmark_name(native_id: str) -> str:
    """'062_kv_cache_update_with_rope_backward' → 'KV cache update with RoPE backward'."""
    name = native_id.rsplit("/", 1)[-1]
    name = re.sub(r"\.py$", "", name)
    name = re.sub(r"^\d+_", "", name)
    words = [word for word in re.split(r"[_\s]+", name) if word]
    if not words:
        return native_id
    out = [_TITLE_WORDS.get(word.lower(), word.lower() if not word.isupper() else word) for word in words]
    first = out[0]
    if first == first.lower():
        out[0] = first[:1].upper() + first[1:]
    return " ".join(out)


def parse_timestamp(value: Any, *, where: str) -> datetime | None:
    """ISO 8601 → aware UTC datetime; a timestamp without a timezone is taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ManifestError(f"{where} must be an ISO 8601 string, not {value!r}")
    parsed = parse_datetime(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    if parsed is None:
        raise ManifestError(f"{where} is not an ISO 8601 timestamp: {value!r}")
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, timezone.utc)
    return parsed


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    run_ids: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged"


def run_identity(bundle: VerifiedBundle) -> dict[str, Any]:
    """The source's own identity of a run (DESIGN §1): for SOL-ExecBench (source, kernel, GPU
    type, evaluation stack version, submission id). Generally: the comparison-key parts plus the
    source's external id, so one external id on two boards is two runs."""
    spec = bundle.run_spec
    native = spec["sourceNative"]
    harness = bundle.docs["protocol"]["spec"].get("harness", {})
    hardware = bundle.docs["environment"]["spec"].get("hardware", {})
    return {
        "source": native["source"],
        "benchmark": native["benchmark"],
        "hardware": ranking.normalise_product(str(hardware.get("product", ""))),
        "harness": {"name": str(harness.get("name", "")), "version": str(harness.get("version", ""))},
        "externalId": native["externalId"],
    }


def public_id_candidates(identity_json: str) -> Iterable[str]:
    """8 hex characters of sha256(identity), extended by 2 on each collision."""
    full = canonical.sha256_hex(identity_json.encode("utf-8"))
    for length in range(8, 65, 2):
        yield full[:length]


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


class _Importer:
    """Caches of the small tables (sources, benchmarks, groups, projects) for one import."""

    def __init__(
        self, *, evidence_level: str, trust_annotations: bool, actor: Any, actor_label: str, reason: str
    ) -> None:
        self.evidence_level = evidence_level
        self.trust_annotations = trust_annotations
        self.actor = actor
        self.actor_label = actor_label
        self.reason = reason
        self.sources: dict[str, Source] = {s.slug: s for s in Source.objects.all()}
        self.benchmarks: dict[tuple[int, str], Benchmark] = {}
        self.groups: dict[str, ComparisonGroup] = {}
        self.projects: dict[str, Project] = {}
        self.touched_groups: set[int] = set()
        self.now = timezone.now()

    # -- small tables ---------------------------------------------------------------------
    def source(self, slug: str, origin: str) -> Source:
        if slug not in self.sources:
            if slug not in KNOWN_SOURCES:
                raise ManifestError(f"{origin}: unknown source {slug!r}; known sources are {sorted(KNOWN_SOURCES)}")
            name, url = KNOWN_SOURCES[slug]
            self.sources[slug] = Source.objects.create(slug=slug, name=name, url=url)
        return self.sources[slug]

    def benchmark(self, source: Source, native_id: str) -> Benchmark:
        key = (source.pk, native_id)
        if key not in self.benchmarks:
            benchmark, _ = Benchmark.objects.get_or_create(
                source=source,
                native_id=native_id,
                defaults={"title": humanize_benchmark_name(native_id)},
            )
            self.benchmarks[key] = benchmark
        return self.benchmarks[key]

    def prefetch_projects(self, names: Iterable[str]) -> None:
        """Find or create the projects of a batch with a fixed number of queries."""
        wanted = {name.strip() for name in names if name.strip()} - set(self.projects)
        if not wanted:
            return
        for project in Project.objects.filter(name__in=wanted):
            self.projects[project.name] = project
        missing = sorted(wanted - set(self.projects))
        if not missing:
            return
        slugs = {name: slugify(name)[:180] or canonical.sha256_hex(name.encode())[:12] for name in missing}
        taken = set(Project.objects.filter(slug__in=set(slugs.values())).values_list("slug", flat=True))
        new = []
        for name in missing:
            slug = slugs[name]
            if slug in taken:
                slug = f"{slug}-{canonical.sha256_hex(name.encode())[:6]}"
            taken.add(slug)
            new.append(Project(slug=slug, name=name))
        Project.objects.bulk_create(new, batch_size=1000)
        if any(project.pk is None for project in new):
            new = list(Project.objects.filter(name__in=missing))
        for project in new:
            self.projects[project.name] = project

    def project(self, name: str) -> Project | None:
        name = name.strip()
        if not name:
            return None
        if name not in self.projects:
            slug = slugify(name)[:180] or canonical.sha256_hex(name.encode())[:12]
            project = Project.objects.filter(name=name).first()
            if project is None:
                if Project.objects.filter(slug=slug).exists():
                    slug = f"{slug}-{canonical.sha256_hex(name.encode())[:6]}"
                project = Project.objects.create(slug=slug, name=name)
            self.projects[name] = project
        return self.projects[name]

    def group(self, bundle: VerifiedBundle, source: Source, benchmark: Benchmark) -> ComparisonGroup:
        protocol_spec = bundle.docs["protocol"]["spec"]
        harness = protocol_spec.get("harness", {}) if isinstance(protocol_spec.get("harness"), dict) else {}
        family = str((protocol_spec.get("comparability") or {}).get("family", ""))
        product = str(bundle.docs["environment"]["spec"].get("hardware", {}).get("product", ""))
        parts = ranking.comparison_key_document(
            family=family,
            source=source.slug,
            benchmark=benchmark.native_id,
            product=product,
            harness_name=str(harness.get("name", "")),
            harness_version=str(harness.get("version", "")),
        )
        key = canonical.key_digest(parts)
        if key not in self.groups:
            rule = ranking.ranking_rule(protocol_spec)
            group, _ = ComparisonGroup.objects.get_or_create(
                key=key,
                defaults={
                    "key_document": canonical.dumps_str(parts),
                    "source": source,
                    "benchmark": benchmark,
                    "family": family,
                    "hardware_product": parts["hardware"],
                    "harness_name": parts["harness"]["name"],
                    "harness_version": parts["harness"]["version"],
                    "ranking_metric": rule.metric,
                    "ranking_direction": rule.direction,
                    "best_per": rule.best_per,
                },
            )
            self.groups[key] = group
        return self.groups[key]

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
            existing = {obj.digest: obj for obj in model.objects.filter(digest__in=lookup).only(*columns)}
            missing = [digest for digest in wanted if digest not in existing]
            if role == "implementation" and missing:
                self.prefetch_projects(str(wanted[digest].docs[role]["spec"].get("project", "")) for digest in missing)
            new = [self._document_row(role, model, digest, wanted[digest]) for digest in missing]
            if new:
                model.objects.bulk_create(new, batch_size=1000)
                # bulk_create sets pks on PostgreSQL and SQLite ≥ 3.35; fetch them where it does not.
                if any(obj.pk is None for obj in new):
                    new = list(model.objects.filter(digest__in=[o.digest for o in new]).only(*columns))
                existing.update({obj.digest: obj for obj in new})
            found[role] = existing
        return found

    def _document_row(self, role: str, model: type, digest: str, bundle: VerifiedBundle) -> Any:
        doc = bundle.docs[role]
        metadata = doc.get("metadata", {})
        spec = doc["spec"]
        common = {
            "digest": digest,
            "name": str(metadata.get("name", ""))[:200],
            "title": str(metadata.get("title", ""))[:300],
            "document": canonical.dumps_str(doc),
        }
        if role == "protocol":
            harness = spec.get("harness") if isinstance(spec.get("harness"), dict) else {}
            measurement = spec.get("measurement") if isinstance(spec.get("measurement"), dict) else {}
            return Protocol(
                **common,
                harness_name=str(harness.get("name", ""))[:200],
                harness_version=str(harness.get("version", ""))[:100],
                family=str((spec.get("comparability") or {}).get("family", ""))[:100],
                timer=str(measurement.get("timer", ""))[:100],
                primary_statistic=str(measurement.get("primaryStatistic", ""))[:50],
            )
        if role == "environment":
            hardware = spec.get("hardware") if isinstance(spec.get("hardware"), dict) else {}
            product = ranking.normalise_product(str(hardware.get("product", "")))
            return Environment(
                **common,
                vendor=str(hardware.get("vendor", ""))[:100],
                product=product,
                architecture=str(hardware.get("architecture") or ranking.architecture_for(product))[:50],
            )
        if role == "workload":
            target = spec.get("benchmark") if isinstance(spec.get("benchmark"), dict) else {}
            benchmark = None
            if target.get("source") and target.get("nativeId"):
                benchmark = self.benchmark(self.source(str(target["source"]), bundle.origin), str(target["nativeId"]))
            cases = spec.get("cases") if isinstance(spec.get("cases"), list) else []
            return Workload(**common, benchmark=benchmark, case_count=len(cases))
        project = self.project(str(spec.get("project", "")))
        return Implementation(
            **common,
            project=project,
            submitter=str(spec.get("submitter", ""))[:300],
            revision=str(spec.get("revision", ""))[:300],
        )

    # -- runs -----------------------------------------------------------------------------
    def run_fields(self, bundle: VerifiedBundle, docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        spec = bundle.run_spec
        native = spec["sourceNative"]
        origin = bundle.origin
        source = self.source(native["source"], origin)
        benchmark_source = source
        workload_doc = bundle.docs.get("workload")
        if workload_doc:
            target = workload_doc["spec"].get("benchmark")
            if isinstance(target, dict) and target.get("source"):
                benchmark_source = self.source(str(target["source"]), origin)
        benchmark = self.benchmark(benchmark_source, native["benchmark"])
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
        evidence = self.evidence_level
        if self.trust_annotations and A_EVIDENCE in annotations:
            evidence = annotations[A_EVIDENCE]
            if evidence not in EvidenceLevel.values:
                raise ManifestError(f"{origin}: unknown evidence level {evidence!r}")
        if evidence == EvidenceLevel.KERNELINDEX_RERUN and group.family != "kernelindex_rerun":
            raise ManifestError(
                f"{origin}: only a run measured by the KernelIndex rerun harness can have "
                f"evidence level kernelindex_rerun (this protocol's family is {group.family!r})"
            )
        implementation = docs["implementation"].get(bundle.declared.get("implementation", ""))
        submitter = str(native.get("submitter") or (implementation.submitter if implementation else ""))
        metadata = bundle.run.get("metadata", {})
        published = (
            parse_timestamp(annotations.get(A_PUBLISHED), where=f"{origin}: {A_PUBLISHED}")
            if self.trust_annotations
            else None
        )
        provenance = annotations.get(A_PROVENANCE_URL, "")
        source_rank = annotations.get(A_SOURCE_RANK)
        return {
            "digest": bundle.digests["run"],
            "document": canonical.dumps_str(bundle.run),
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
            "provenance_url": str(provenance)[:1000] if isinstance(provenance, str) else "",
            "retrieved_at": parse_timestamp(annotations.get(A_RETRIEVED_AT), where=f"{origin}: {A_RETRIEVED_AT}"),
        }


_UPDATABLE = (
    "digest",
    "document",
    "name",
    "title",
    "labels",
    "source",
    "benchmark",
    "group",
    "protocol",
    "environment",
    "workload",
    "implementation",
    "protocol_digest",
    "environment_digest",
    "workload_digest",
    "implementation_digest",
    "external_id",
    "submitter",
    "status",
    "status_detail",
    "evidence_level",
    "is_reference",
    "primary_statistic",
    "latency_ns",
    "sol_score",
    "avg_speedup",
    "fast_1_count",
    "fast_1_total",
    "source_rank",
    "observed_at",
    "provenance_url",
    "retrieved_at",
    "revision",
)


def bundles_import(
    bundles: Iterable[VerifiedBundle],
    *,
    evidence_level: str = EvidenceLevel.SOURCE_REPORTED,
    trust_annotations: bool = False,
    actor: Any = None,
    actor_label: str = "import",
    reason: str = "imported",
    batch_size: int = 2000,
) -> ImportResult:
    """Import verified bundles atomically. Unchanged runs are left alone; changed ones get a
    revision; ranks of every touched comparison group are recomputed once at the end.

    ``trust_annotations`` (operators' ``manage.py import`` only) takes the evidence level,
    publication date and provenance from ``kernelindex.dev/…`` annotations, so an export
    re-imports as it was. The API never trusts them.
    """
    result = ImportResult()
    with transaction.atomic():
        importer = _Importer(
            evidence_level=evidence_level,
            trust_annotations=trust_annotations,
            actor=actor,
            actor_label=actor_label,
            reason=reason,
        )
        batch: list[VerifiedBundle] = []
        for bundle in bundles:
            batch.append(bundle)
            if len(batch) >= batch_size:
                _import_batch(importer, batch, result)
                batch = []
        if batch:
            _import_batch(importer, batch, result)
        ranking.recompute_groups(importer.touched_groups)
    return result


def _import_batch(importer: _Importer, bundles: list[VerifiedBundle], result: ImportResult) -> None:
    docs = importer.documents(bundles)
    rows: dict[str, tuple[VerifiedBundle, dict[str, Any]]] = {}
    for bundle in bundles:
        identity = canonical.dumps_str(run_identity(bundle))
        # The same run twice in one import: the later row wins, as a re-import would.
        rows[identity] = (bundle, importer.run_fields(bundle, docs))
    existing = {run.identity: run for run in Run.objects.filter(identity__in=list(rows))}
    taken = set(
        Run.objects.filter(
            public_id__in=[next(iter(public_id_candidates(identity))) for identity in rows if identity not in existing]
        ).values_list("public_id", flat=True)
    )
    new_runs: list[Run] = []
    changed_runs: list[Run] = []
    revisions: list[RunRevision] = []
    for identity, (_bundle, fields) in rows.items():
        published_hint = fields.pop("published_at_hint")
        run = existing.get(identity)
        if run is None:
            public_id = _free_public_id(identity, taken)
            taken.add(public_id)
            run = Run(
                identity=identity,
                public_id=public_id,
                published_at=published_hint or importer.now,
                revision=1,
                **fields,
            )
            new_runs.append(run)
            result.created += 1
        else:
            fields["revision"] = run.revision
            changes = {}
            for name, value in fields.items():
                attname = (
                    name + "_id"
                    if name in {"source", "benchmark", "group", "protocol", "environment", "workload", "implementation"}
                    else name
                )
                old = getattr(run, attname)
                new = value.pk if hasattr(value, "pk") and attname.endswith("_id") else value
                if value is None and attname.endswith("_id"):
                    new = None
                if old != new:
                    changes[name] = [_jsonable(old), _jsonable(new)]
            if not changes:
                result.unchanged += 1
                result.run_ids.append(run.public_id)
                importer.touched_groups.add(run.group_id)
                continue
            previous_digest = run.digest
            for name, value in fields.items():
                setattr(run, name, value)
            run.revision += 1
            changed_runs.append(run)
            revisions.append(
                RunRevision(
                    run=run,
                    number=run.revision,
                    digest=run.digest,
                    document=run.document,
                    previous_digest=previous_digest if previous_digest != run.digest else "",
                    actor=importer.actor,
                    actor_label=importer.actor_label[:300],
                    reason=importer.reason,
                    changes={k: v for k, v in changes.items() if k != "document"},
                )
            )
            result.updated += 1
        result.run_ids.append(run.public_id)
        importer.touched_groups.add(fields["group"].pk)
    if new_runs:
        Run.objects.bulk_create(new_runs, batch_size=1000)
        # bulk_create sets pks on PostgreSQL and SQLite ≥ 3.35; fetch them where it does not.
        if any(run.pk is None for run in new_runs):
            ids = dict(Run.objects.filter(identity__in=[r.identity for r in new_runs]).values_list("identity", "pk"))
            for run in new_runs:
                run.pk = ids[run.identity]
        for run in new_runs:
            revisions.append(
                RunRevision(
                    run=run,
                    number=1,
                    digest=run.digest,
                    document=run.document,
                    previous_digest="",
                    actor=importer.actor,
                    actor_label=importer.actor_label[:300],
                    reason=importer.reason,
                )
            )
    if changed_runs:
        Run.objects.bulk_update(changed_runs, list(_UPDATABLE), batch_size=500)
    if revisions:
        RunRevision.objects.bulk_create(revisions, batch_size=1000)


def _free_public_id(identity: str, taken: set[str]) -> str:
    """``taken`` already holds every stored id among the 8-character candidates of this batch;
    only a collision (extending the id) costs a query."""
    for index, candidate in enumerate(public_id_candidates(identity)):
        if candidate in taken:
            continue
        if index > 0 and Run.objects.filter(public_id=candidate).exists():
            continue
        return candidate
    raise ManifestError(f"no free public id for {identity}")  # needs a full sha256 collision


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool, dict, list)) or value is None:
        return value
    return str(value)


# -- catalogue: benchmarks and their workloads ------------------------------------------------


@dataclass
class BenchmarkFacts:
    """What one source file says about one benchmark. Empty values mean "not stated here"."""

    source: str
    native_id: str
    numeric_id: int | None = None
    title: str = ""
    collection: str = ""
    hf_model_id: str = ""
    tags: list[str] = field(default_factory=list)
    description: str = ""
    reference_code: str = ""
    definition: str = ""  # the source's definition document, canonical JSON
    cases: list[dict[str, Any]] | None = None  # this file's view of the workload's cases
    aggregation: str = ""
    origin: str = ""


@dataclass
class CatalogueResult:
    benchmarks_created: int = 0
    benchmarks_updated: int = 0
    workloads_created: int = 0
    unchanged: int = 0

    def __str__(self) -> str:
        return (
            f"{self.benchmarks_created} benchmark(s) created, {self.benchmarks_updated} updated, "
            f"{self.workloads_created} workload version(s) created, {self.unchanged} unchanged"
        )


# Per-case fields a later file may fill in; None means "this file does not say".
_CASE_FIELDS = ("id", "tolerance", "solLatencyNs", "baselineLatencyNs", "hardware")
_BENCHMARK_TEXT_FIELDS = ("title", "collection", "hf_model_id", "description", "reference_code", "definition")


def merge_cases(current: list[dict[str, Any]] | None, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge one file's view of a workload's cases into what the index already knows.

    Cases match by index when both lists describe the same suite (same number of cases, and
    every axis both name has the same value); then every field is the union of what the two
    say, a value stated by the newer file winning. Files that agree (the catalogue and the
    kernel API of one kernel) therefore merge to the same workload in either order. A suite
    that does not match (other cases, other sizes) replaces the old one: a new workload
    version, never a mix.
    """
    if not current or len(current) != len(new):
        return [dict(case) for case in new]
    for old, case in zip(current, new, strict=True):
        old_axes, new_axes = old.get("axes") or {}, case.get("axes") or {}
        if any(old_axes[name] != new_axes[name] for name in old_axes.keys() & new_axes.keys()):
            return [dict(case) for case in new]
    merged = []
    for old, case in zip(current, new, strict=True):
        out = dict(old)
        out["index"] = case["index"]
        out["axes"] = {**(old.get("axes") or {}), **(case.get("axes") or {})}
        for name in _CASE_FIELDS:
            if case.get(name) is not None:
                out[name] = case[name]
        merged.append(out)
    return merged


def workload_document(
    *, source: str, native_id: str, title: str, cases: list[dict[str, Any]], aggregation: str
) -> dict[str, Any]:
    """The Workload document of a benchmark's suite (DESIGN §1)."""
    ordered = sorted(cases, key=lambda case: case["index"])
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": f"{native_id.replace('/', '-')}-workload"[:200],
            "title": f"{title} · suite of {len(ordered)} cases",
        },
        "spec": {
            "benchmark": {"source": source, "nativeId": native_id},
            "cases": ordered,
            "suite": {"caseCount": len(ordered), "aggregation": aggregation},
        },
    }


def _merge_facts(facts: list[BenchmarkFacts]) -> BenchmarkFacts:
    """Several files about one benchmark in one import, merged as if imported one by one."""
    merged = BenchmarkFacts(source=facts[0].source, native_id=facts[0].native_id)
    for item in facts:
        if item.numeric_id is not None:
            merged.numeric_id = item.numeric_id
        for name in _BENCHMARK_TEXT_FIELDS + ("aggregation",):
            if getattr(item, name):
                setattr(merged, name, getattr(item, name))
        merged.tags = merged.tags + [tag for tag in item.tags if tag not in merged.tags]
        if item.cases is not None:
            merged.cases = merge_cases(merged.cases, item.cases)
        merged.origin = ", ".join(filter(None, [merged.origin, item.origin]))
    return merged


@transaction.atomic
def benchmarks_import(facts: Iterable[BenchmarkFacts]) -> CatalogueResult:
    """Create or update benchmarks and their current workload from catalogue files, atomically.

    Benchmark fields a file states overwrite the stored ones; fields it does not state are
    kept. The workload is the merge (``merge_cases``) of what the index knows and what the
    files say; when that changes its digest, a new Workload row is created (old versions stay,
    runs that declared them keep them) and becomes the benchmark's current workload.
    """
    result = CatalogueResult()
    grouped: dict[tuple[str, str], list[BenchmarkFacts]] = {}
    for item in facts:
        grouped.setdefault((item.source, item.native_id), []).append(item)
    if not grouped:
        return result
    importer = _Importer(
        evidence_level=EvidenceLevel.SOURCE_REPORTED,
        trust_annotations=False,
        actor=None,
        actor_label="import",
        reason="catalogue",
    )
    for (slug, native_id), items in grouped.items():
        item = _merge_facts(items)
        source = importer.source(slug, item.origin)
        benchmark = Benchmark.objects.select_related("workload").filter(source=source, native_id=native_id).first()
        created = benchmark is None
        if created:
            benchmark = Benchmark(source=source, native_id=native_id, title=humanize_benchmark_name(native_id))
        changed: list[str] = []
        for name in _BENCHMARK_TEXT_FIELDS:
            value = getattr(item, name)
            if value and getattr(benchmark, name) != value:
                setattr(benchmark, name, value)
                changed.append(name)
        if item.numeric_id is not None and benchmark.numeric_id != item.numeric_id:
            benchmark.numeric_id = item.numeric_id
            changed.append("numeric_id")
        tags = list(benchmark.tags or []) + [tag for tag in item.tags if tag not in (benchmark.tags or [])]
        if tags != list(benchmark.tags or []):
            benchmark.tags = tags
            changed.append("tags")
        if created or changed:
            benchmark.full_clean(exclude=["workload", "source"], validate_unique=False)
            benchmark.save()
        if item.cases is not None:
            current = benchmark.workload
            current_cases = current.cases if current else None
            aggregation = item.aggregation or (current.spec.get("suite", {}).get("aggregation", "") if current else "")
            doc = workload_document(
                source=slug,
                native_id=native_id,
                title=benchmark.title,
                cases=merge_cases(current_cases, item.cases),
                aggregation=aggregation,
            )
            digest = canonical.digest_of(doc)
            if current is None or current.digest != digest:
                workload = Workload.objects.filter(digest=digest).first()
                if workload is None:
                    workload = Workload.objects.create(
                        digest=digest,
                        name=doc["metadata"]["name"],
                        title=doc["metadata"]["title"][:300],
                        document=canonical.dumps_str(doc),
                        benchmark=benchmark,
                        case_count=len(doc["spec"]["cases"]),
                    )
                    result.workloads_created += 1
                benchmark.workload = workload
                benchmark.save(update_fields=["workload", "updated_at"])
                changed.append("workload")
        if created:
            result.benchmarks_created += 1
        elif changed:
            result.benchmarks_updated += 1
        else:
            result.unchanged += 1
    return result
