"""Find-or-create caches of the small tables an import touches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils.text import slugify

from kernelindex import canonical
from runs import ranking
from runs.identity import KNOWN_SOURCES, benchmark_target, humanize_benchmark_name
from runs.manifests import ManifestError, VerifiedBundle
from runs.models import Benchmark, ComparisonGroup, Project, Source


class Lookups:
    """Caches of the small tables (sources, benchmarks, comparison groups, projects) for one
    import: each row is found or created once, and a batch's rows with a fixed number of queries."""

    def __init__(self) -> None:
        self.sources: dict[str, Source] = {s.slug: s for s in Source.objects.all()}
        self.benchmarks: dict[tuple[int, str], Benchmark] = {}
        self.groups: dict[str, ComparisonGroup] = {}
        self.groups_by_parts: dict[tuple[str, ...], ComparisonGroup] = {}
        self.keys_by_parts: dict[tuple[str, ...], tuple[dict[str, Any], str]] = {}
        self.projects: dict[str, Project] = {}
        # Groups this import created: they have no runs but the ones it writes.
        self.new_groups: set[int] = set()

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
        for project in Project.objects.filter(name__any=wanted):
            self.projects[project.name] = project
        missing = sorted(wanted - set(self.projects))
        if not missing:
            return
        slugs = {name: slugify(name)[:180] or canonical.sha256_hex(name.encode())[:12] for name in missing}
        taken = set(Project.objects.filter(slug__any=set(slugs.values())).values_list("slug", flat=True))
        new = []
        for name in missing:
            slug = slugs[name]
            if slug in taken:
                slug = f"{slug}-{canonical.sha256_hex(name.encode())[:6]}"
            taken.add(slug)
            new.append(Project(slug=slug, name=name))
        Project.objects.bulk_create(new, batch_size=1000)
        if any(project.pk is None for project in new):
            new = list(Project.objects.filter(name__any=missing))
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
                self.new_groups.add(group.pk)
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
                source_id__any={pk for pk, _ in wanted}, native_id__any={name for _, name in wanted}
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
                    missing = list(Benchmark.objects.filter(native_id__any=[b.native_id for b in missing]))
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
        for group in ComparisonGroup.objects.filter(key__any=list(new)):
            self.groups[group.key] = group
        created = [
            self._new_group(bundle, source, benchmark, parts, key)
            for key, (_, bundle, source, benchmark, parts) in new.items()
            if key not in self.groups
        ]
        if created:
            ComparisonGroup.objects.bulk_create(created)
            if any(group.pk is None for group in created):
                created = list(ComparisonGroup.objects.filter(key__any=[g.key for g in created]))
            for group in created:
                self.groups[group.key] = group
                self.new_groups.add(group.pk)
        for key, (cache_key, *_rest) in new.items():
            self.groups_by_parts[cache_key] = self.groups[key]
