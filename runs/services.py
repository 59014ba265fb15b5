"""Writes to the run index. Every run enters through ``bundles_import``.

Imports are atomic (one transaction for a whole call) and idempotent: a run is found again by
its identity (the source's own identity of the run); an unchanged run is left alone, a changed
one gets a new RunRevision recording who changed it and why, never a duplicate row.

The work is done in batches with a fixed number of queries per batch (lookups with ``__in``,
``bulk_create``/``bulk_update``), so importing 100,000 runs does not cost 100,000 round trips.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.text import slugify

from kernelindex import canonical
from runs import ranking, reruns
from runs.manifests import (
    A_EVIDENCE,
    A_PROVENANCE_URL,
    A_PUBLIC_REASON,
    A_PUBLISHED,
    A_QUARANTINED,
    A_RETRIEVED_AT,
    A_SOURCE_RANK,
    A_VISIBILITY,
    ManifestError,
    VerifiedBundle,
)
from runs.models import (
    ELIGIBLE,
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
    Visibility,
    Workload,
)

KNOWN_SOURCES = {
    "sol-execbench": ("NVIDIA SOL-ExecBench", "https://research.nvidia.com/benchmarks/sol-execbench/"),
    "kernelbench": ("KernelBench", "https://github.com/ScalingIntelligence/KernelBench"),
    "gpu-mode": ("GPU MODE", "https://www.gpumode.com/"),
    "kernelindex": ("KernelIndex", ""),
    # Runs their authors sent through the API (submitter_reported), with no source behind them.
    "submitted": ("Submitted by their authors", ""),
}
# Sources whose runs only their importer (or KernelIndex's own rerun harness) may record: an API
# submission naming one would rank inside that source's boards.
SUBMITTABLE_SOURCES = {"submitted"}

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


def benchmark_target(bundle: VerifiedBundle) -> tuple[str, str]:
    """(source slug, native id) of the benchmark a run belongs to.

    The benchmark its workload document names when the bundle carries one, else the run's own
    source and ``sourceNative.benchmark``. So a KernelIndex rerun of a SOL-ExecBench definition
    (workload ``spec.benchmark`` = {source: "sol-execbench", nativeId: "062_…"}) belongs to
    SOL-ExecBench's benchmark, the same row as the source's boards and catalogue, while the
    run's source (and its comparison key's source) stays KernelIndex.
    """
    native = bundle.run_spec["sourceNative"]
    workload = bundle.docs.get("workload")
    target = workload["spec"].get("benchmark") if workload else None
    if not isinstance(target, dict) or not target.get("source"):
        return str(native["source"]), str(native["benchmark"])
    native_id = str(target.get("nativeId") or native["benchmark"])
    if native_id != str(native["benchmark"]):
        raise ManifestError(
            f"{bundle.origin}: the run names benchmark {native['benchmark']!r} but its workload is "
            f"benchmark {native_id!r} of {target['source']!r}"
        )
    return str(target["source"]), native_id


def evidence_level_for(bundle: VerifiedBundle, *, default: str, trust_annotations: bool) -> str:
    """The evidence level a bundle is recorded with (DESIGN §3). The one rule:

    - An operator's import (``trust_annotations``: ``manage.py import``, the trusted path)
      records a bundle of the KernelIndex rerun harness (``runs.reruns.is_rerun_bundle``) as
      ``kernelindex_rerun``, and any other bundle with the level its export annotation states
      (so an export re-imports as it was), else ``default``.
    - Every other caller gets ``default``: the API passes ``kernelindex_rerun`` only for a rerun
      token and ``submitter_reported`` otherwise; annotations are never read.
    - Whoever asks, ``kernelindex_rerun`` is refused for a bundle the rerun harness did not write.
    """
    origin = bundle.origin
    evidence = default
    if trust_annotations:
        if reruns.is_rerun_bundle(bundle.docs):
            evidence = EvidenceLevel.KERNELINDEX_RERUN
        elif A_EVIDENCE in bundle.annotations:
            evidence = bundle.annotations[A_EVIDENCE]
    if evidence not in EvidenceLevel.values:
        raise ManifestError(f"{origin}: unknown evidence level {evidence!r}")
    if evidence == EvidenceLevel.KERNELINDEX_RERUN and not reruns.is_rerun_bundle(bundle.docs):
        raise ManifestError(
            f"{origin}: only a run measured by the KernelIndex rerun harness (source {reruns.RERUN_SOURCE!r}, "
            f"harness {reruns.RERUN_HARNESS!r}, comparability family {reruns.RERUN_FAMILY!r}) can have "
            "evidence level kernelindex_rerun"
        )
    return evidence


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
        self,
        *,
        evidence_level: str,
        trust_annotations: bool,
        actor: Any,
        actor_label: str,
        reason: str,
        describe: Callable[[VerifiedBundle], tuple[str, str]] | None = None,
    ) -> None:
        self.evidence_level = evidence_level
        self.trust_annotations = trust_annotations
        self.actor = actor
        self.actor_label = actor_label
        self.reason = reason
        self._describe = describe
        # Runs created by this import, written at its end: identity → (row, (label, reason)).
        self.pending: dict[str, tuple[dict[str, Any], tuple[str, str]]] = {}
        self.pending_public_ids: set[str] = set()
        self.sources: dict[str, Source] = {s.slug: s for s in Source.objects.all()}
        self.benchmarks: dict[tuple[int, str], Benchmark] = {}
        self.groups: dict[str, ComparisonGroup] = {}
        self.groups_by_parts: dict[tuple[str, ...], ComparisonGroup] = {}
        self.keys_by_parts: dict[tuple[str, ...], tuple[dict[str, Any], str]] = {}
        self.projects: dict[str, Project] = {}
        self.touched_groups: set[int] = set()
        self.now = timezone.now()

    def describe(self, bundle: VerifiedBundle) -> tuple[str, str]:
        """(actor label, reason) recorded on the revision this bundle writes."""
        if self._describe is None:
            return self.actor_label[:300], self.reason
        label, reason = self._describe(bundle)
        return label[:300], reason

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

    def _group_key(
        self, bundle: VerifiedBundle, source: Source, benchmark: Benchmark
    ) -> tuple[tuple[str, ...], dict[str, Any], str]:
        protocol_spec = bundle.docs["protocol"]["spec"]
        harness = protocol_spec.get("harness", {}) if isinstance(protocol_spec.get("harness"), dict) else {}
        family = str((protocol_spec.get("comparability") or {}).get("family", ""))
        product = str(bundle.docs["environment"]["spec"].get("hardware", {}).get("product", ""))
        names = (str(harness.get("name", "")), str(harness.get("version", "")))
        # Rows of one board share every part: the key document is serialised once per group.
        cache_key = (family, source.slug, benchmark.native_id, product) + names
        if cache_key in self.groups_by_parts:
            return cache_key, {}, self.groups_by_parts[cache_key].key
        if cache_key in self.keys_by_parts:
            return (cache_key, *self.keys_by_parts[cache_key])
        parts = ranking.comparison_key_document(
            family=family,
            source=source.slug,
            benchmark=benchmark.native_id,
            product=product,
            harness_name=names[0],
            harness_version=names[1],
        )
        self.keys_by_parts[cache_key] = (parts, canonical.key_digest(parts))
        return (cache_key, *self.keys_by_parts[cache_key])

    def _new_group(
        self, bundle: VerifiedBundle, source: Source, benchmark: Benchmark, parts: dict[str, Any], key: str
    ) -> ComparisonGroup:
        rule = ranking.ranking_rule(bundle.docs["protocol"]["spec"])
        return ComparisonGroup(
            key=key,
            key_document=canonical.dumps_str(parts),
            source=source,
            benchmark=benchmark,
            family=parts["family"],
            hardware_product=parts["hardware"],
            harness_name=parts["harness"]["name"],
            harness_version=parts["harness"]["version"],
            ranking_metric=rule.metric,
            ranking_direction=rule.direction,
            best_per=rule.best_per,
        )

    def group(self, bundle: VerifiedBundle, source: Source, benchmark: Benchmark) -> ComparisonGroup:
        cache_key, parts, key = self._group_key(bundle, source, benchmark)
        if cache_key in self.groups_by_parts:
            return self.groups_by_parts[cache_key]
        if key not in self.groups:
            group = ComparisonGroup.objects.filter(key=key).first()
            if group is None:
                group = self._new_group(bundle, source, benchmark, parts, key)
                group.save()
            self.groups[key] = group
        self.groups_by_parts[cache_key] = self.groups[key]
        return self.groups[key]

    def prefetch(self, bundles: list[VerifiedBundle]) -> None:
        """Find or create the benchmarks and comparison groups of a batch with a fixed number
        of queries (a get_or_create each cost four round trips per board)."""
        wanted: dict[tuple[int, str], Source] = {}
        for bundle in bundles:
            self.source(bundle.run_spec["sourceNative"]["source"], bundle.origin)
            slug, native_id = benchmark_target(bundle)
            source = self.source(slug, bundle.origin)
            if (source.pk, native_id) not in self.benchmarks:
                wanted[(source.pk, native_id)] = source
        if wanted:
            for benchmark in Benchmark.objects.filter(
                source_id__in={pk for pk, _ in wanted}, native_id__in={name for _, name in wanted}
            ):
                self.benchmarks.setdefault((benchmark.source_id, benchmark.native_id), benchmark)
            missing = [
                Benchmark(source=source, native_id=name, title=humanize_benchmark_name(name))
                for (pk, name), source in wanted.items()
                if (pk, name) not in self.benchmarks
            ]
            if missing:
                Benchmark.objects.bulk_create(missing)
                if any(benchmark.pk is None for benchmark in missing):
                    missing = list(Benchmark.objects.filter(native_id__in=[b.native_id for b in missing]))
                for benchmark in missing:
                    self.benchmarks.setdefault((benchmark.source_id, benchmark.native_id), benchmark)
        new: dict[str, tuple[tuple[str, ...], VerifiedBundle, Source, Benchmark, dict[str, Any]]] = {}
        for bundle in bundles:
            source = self.sources[bundle.run_spec["sourceNative"]["source"]]
            slug, native_id = benchmark_target(bundle)
            benchmark = self.benchmarks.get((self.sources[slug].pk, native_id))
            if benchmark is None:
                continue
            cache_key, parts, key = self._group_key(bundle, source, benchmark)
            if cache_key in self.groups_by_parts:
                continue
            if key in self.groups:
                self.groups_by_parts[cache_key] = self.groups[key]
                continue
            new.setdefault(key, (cache_key, bundle, source, benchmark, parts))
        if not new:
            return
        for group in ComparisonGroup.objects.filter(key__in=list(new)):
            self.groups[group.key] = group
        created = [
            self._new_group(bundle, source, benchmark, parts, key)
            for key, (_, bundle, source, benchmark, parts) in new.items()
            if key not in self.groups
        ]
        if created:
            ComparisonGroup.objects.bulk_create(created)
            if any(group.pk is None for group in created):
                created = list(ComparisonGroup.objects.filter(key__in=[g.key for g in created]))
            for group in created:
                self.groups[group.key] = group
        for key, (cache_key, *_rest) in new.items():
            self.groups_by_parts[cache_key] = self.groups[key]

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
                for obj, pk in zip(new, insert_rows(model, [_attributes(obj) for obj in new]), strict=True):
                    obj.pk = pk
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
            "document": bundle.texts.get(role) or canonical.dumps_str(doc),
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
        provenance = annotations.get(A_PROVENANCE_URL, "")
        source_rank = annotations.get(A_SOURCE_RANK)
        moderation = moderation_from_annotations(annotations, origin) if self.trust_annotations else {}
        return {
            "digest": bundle.digests["run"],
            "document": bundle.texts.get("run") or canonical.dumps_str(bundle.run),
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
    describe: Callable[[VerifiedBundle], tuple[str, str]] | None = None,
    batch_size: int = 2000,
) -> ImportResult:
    """Import verified bundles atomically. Unchanged runs are left alone; changed ones get a
    revision; ranks of every touched comparison group are recomputed once at the end.

    ``trust_annotations`` (operators' ``manage.py import`` only) takes the evidence level,
    publication date and provenance from ``kernelindex.dev/…`` annotations, so an export
    re-imports as it was. The API never trusts them. The moderation state an export carries
    (visibility, quarantine, public reason) is given to the runs the import creates; a run
    already in the index keeps its own, which only the moderation services change (each
    with a ModerationEvent): re-importing data/ or an old export must not undo a hide.

    ``describe`` gives each bundle's own (actor label, reason) for its revision, so one call can
    import the bundles of many files (``manage.py import`` does: one batch per 2,000 runs, not
    per file) and every revision still names the file it came from.
    """
    result = ImportResult()
    with transaction.atomic():
        importer = _Importer(
            evidence_level=evidence_level,
            trust_annotations=trust_annotations,
            actor=actor,
            actor_label=actor_label,
            reason=reason,
            describe=describe,
        )
        batch: list[VerifiedBundle] = []
        for bundle in bundles:
            batch.append(bundle)
            if len(batch) >= batch_size:
                _import_batch(importer, batch, result)
                batch = []
        if batch:
            _import_batch(importer, batch, result)
        ranked = _insert_pending(importer)
        ranking.recompute_groups(importer.touched_groups - ranked)
    return result


def _import_batch(importer: _Importer, bundles: list[VerifiedBundle], result: ImportResult) -> None:
    importer.prefetch(bundles)
    docs = importer.documents(bundles)
    rows: dict[str, tuple[VerifiedBundle, dict[str, Any]]] = {}
    for bundle in bundles:
        identity = canonical.dumps_str(run_identity(bundle))
        # The same run twice in one import: the later row wins, as a re-import would.
        rows[identity] = (bundle, importer.run_fields(bundle, docs))
    existing = {run.identity: run for run in Run.objects.filter(identity__in=list(rows))}
    taken = importer.pending_public_ids | set(
        Run.objects.filter(
            public_id__in=[next(iter(public_id_candidates(identity))) for identity in rows if identity not in existing]
        ).values_list("public_id", flat=True)
    )
    changed_runs: list[Run] = []
    revisions: list[RunRevision] = []
    for identity, (_bundle, fields) in rows.items():
        published_hint = fields.pop("published_at_hint")
        # Moderation state from a trusted export applies to runs this import creates only.
        moderation = fields.pop("moderation_hint")
        run = existing.get(identity)
        if run is None and identity in importer.pending:
            # Already created earlier in this import (not written yet): the later row wins.
            earlier = importer.pending[identity][0]
            row = _new_row(fields, identity, earlier["public_id"], earlier["published_at"])
            row.update(moderation)
            importer.pending[identity] = (row, importer.describe(_bundle))
            result.run_ids.append(earlier["public_id"])
            importer.touched_groups.add(fields["group"].pk)
            continue
        if run is None:
            public_id = _free_public_id(identity, taken)
            taken.add(public_id)
            row = _new_row(fields, identity, public_id, published_hint or importer.now)
            row.update(moderation)
            importer.pending[identity] = (row, importer.describe(_bundle))
            importer.pending_public_ids.add(public_id)
            result.created += 1
            result.run_ids.append(public_id)
            importer.touched_groups.add(fields["group"].pk)
            continue
        # An existing run: unchanged, or a new revision.
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
        label, why = importer.describe(_bundle)
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
                actor_label=label,
                reason=why,
                changes={k: v for k, v in changes.items() if k != "document"},
            )
        )
        result.updated += 1
        result.run_ids.append(run.public_id)
        importer.touched_groups.add(fields["group"].pk)
    if changed_runs:
        Run.objects.bulk_update(changed_runs, list(_UPDATABLE), batch_size=500)
    if revisions:
        RunRevision.objects.bulk_create(revisions, batch_size=1000)


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


def _new_row(fields: dict[str, Any], identity: str, public_id: str, published_at: datetime) -> dict[str, Any]:
    """A new run's columns for ``insert_rows`` (foreign keys as ids)."""
    row = {name: value for name, value in fields.items() if name not in _FOREIGN_KEYS}
    for name in _FOREIGN_KEYS:
        row[name + "_id"] = fields[name].pk if fields[name] is not None else None
    row.update(identity=identity, public_id=public_id, published_at=published_at, revision=1)
    return row


def _insert_pending(importer: _Importer) -> set[int]:
    """Write the runs this import creates, in one pass at the end, with their revisions.

    Runs of a comparison group that had no runs before are written with their rank already
    computed (``ranking.compute_ranks``, the one ranking rule; eligibility from the one
    ``ELIGIBLE`` rule, asked of the database once per combination of its fields), so a large
    first import does not insert 100,000 rows and then update each one's rank. Returns those
    groups; the others are ranked by ``ranking.recompute_groups`` as usual.
    """
    if not importer.pending:
        return set()
    pending = list(importer.pending.values())
    group_ids = {row["group_id"] for row, _ in pending}
    occupied = set(Run.objects.filter(group_id__in=group_ids).values_list("group_id", flat=True).distinct())
    fresh = group_ids - occupied
    groups = {group.pk: group for group in importer.groups.values() if group.pk in fresh}
    eligible: dict[tuple[Any, ...], bool] = {}
    by_group: dict[int, list[ranking.RankRow]] = {}
    for index, (row, _) in enumerate(pending):
        group = groups.get(row["group_id"])
        if group is None:
            continue
        against = {
            "status": row["status"],
            "visibility": row.get("visibility", Visibility.PUBLISHED),
            "quarantined": row.get("quarantined", False),
            "is_reference": row["is_reference"],
        }
        key = tuple(against.values())
        if key not in eligible:
            eligible[key] = ELIGIBLE.check(against)
        by_group.setdefault(group.pk, []).append(
            ranking.RankRow(
                pk=index,
                group_id=group.pk,
                submitter=row["submitter"],
                implementation_id=row["implementation_id"],
                metric=row[group.ranking_metric],
                observed_at=row["observed_at"],
                public_id=row["public_id"],
                eligible=eligible[key],
            )
        )
    for group_id, rank_rows in by_group.items():
        group = groups[group_id]
        rule = ranking.RankingRule(group.ranking_metric, group.ranking_direction, group.best_per)
        for index, rank in ranking.compute_ranks(rank_rows, rule).items():
            pending[index][0]["rank"] = rank
    pks = insert_rows(Run, [row for row, _ in pending])
    actor_id = importer.actor.pk if importer.actor is not None else None
    insert_rows(
        RunRevision,
        [
            {
                "run_id": pk,
                "number": 1,
                "digest": row["digest"],
                "document": row["document"],
                "previous_digest": "",
                "actor_id": actor_id,
                "actor_label": label,
                "reason": why,
                "changes": {},
            }
            for pk, (row, (label, why)) in zip(pks, pending, strict=True)
        ],
    )
    importer.pending.clear()
    return fresh


def _attributes(obj: Any) -> dict[str, Any]:
    """A model instance's column values for ``insert_rows`` (automatic timestamps left to it)."""
    return {
        f.attname: getattr(obj, f.attname)
        for f in obj._meta.concrete_fields
        if not f.primary_key and not getattr(f, "auto_now", False) and not getattr(f, "auto_now_add", False)
    }


_FOREIGN_KEYS = ("source", "benchmark", "group", "protocol", "environment", "workload", "implementation")


def insert_rows(model: type, rows: list[dict[str, Any]]) -> list[int]:
    """Insert rows given as {attname: value} and return their primary keys, in order.

    On PostgreSQL this is ``COPY … FROM STDIN`` with primary keys drawn from the table's
    sequence beforehand: several times faster than a multi-row INSERT for 100,000 runs and
    their revisions, and no model instances are built. Elsewhere it is ``bulk_create``. Both
    fill unset fields from the model's defaults (``auto_now`` fields with the current time)
    and leave validation to the database constraints, as ``bulk_create`` does.
    """
    if not rows:
        return []
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    now = timezone.now()
    # Each column's value when a row does not give it: the current time for automatic
    # timestamps, the field's default otherwise.
    defaults = [
        now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default() for f in fields
    ]
    columns = list(zip([f.attname for f in fields], defaults, strict=True))
    if connection.vendor != "postgresql":
        objs = [model(**{name: row.get(name, default) for name, default in columns}) for row in rows]
        model.objects.bulk_create(objs, batch_size=1000)
        return [obj.pk for obj in objs]
    table = model._meta.db_table
    quote = connection.ops.quote_name
    json_columns = [i for i, f in enumerate(fields) if f.get_internal_type() == "JSONField"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, model._meta.pk.column, len(rows)],
        )
        pks = [pk for (pk,) in cursor.fetchall()]
        names = ", ".join(quote(c) for c in [model._meta.pk.column] + [f.column for f in fields])
        with cursor.cursor.copy(f"COPY {quote(table)} ({names}) FROM STDIN") as copy:
            for pk, row in zip(pks, rows, strict=True):
                values = [pk] + [row.get(name, default) for name, default in columns]
                for index in json_columns:
                    values[index + 1] = json.dumps(values[index + 1])
                copy.write_row(values)
    return pks


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
