"""The catalogue: benchmarks and their workloads, from the sources' catalogue files."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from ingest.lookups import Lookups
from kernelindex import canonical, links
from runs.identity import humanize_benchmark_name
from runs.manifests import ManifestError
from runs.models import Benchmark, Workload


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
def import_benchmarks(facts: Iterable[BenchmarkFacts]) -> CatalogueResult:
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
    lookups = Lookups()
    for (slug, native_id), items in grouped.items():
        item = _merge_facts(items)
        why = links.native_id_problem(native_id)
        if why is not None:
            raise ManifestError(f"{item.origin}: benchmark native id {why}")
        source = lookups.source(slug, item.origin)
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
