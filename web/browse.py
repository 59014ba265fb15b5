"""Reads behind the index pages (benchmarks, GPUs, sources, projects) and the cross-GPU view of
a benchmark. Each function states its query count; lists are paginated or capped here.

The per-benchmark, per-source and per-project counts are the figures runs.counts stores at every
write; a GPU's are sums over its comparison groups' stored figures. No list counts runs per
request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from kernelindex import links
from kernelindex.gpus import architecture_for
from runs.models import Benchmark, ComparisonGroup, EvidenceLevel, Project, Run, Source
from web.tables import BadQuery, Filter, gpu_products, gpu_slug

MATRIX_GROUPS = 40
MATRIX_ROWS = 3000
MATRIX_TOP = 100


def _sorted(rows: QuerySet, sort: str, sorts: dict[str, list[Any]], default: str) -> tuple[QuerySet, str]:
    if sort.lstrip("-") not in sorts:
        sort = default
    order = sorts[sort.lstrip("-")]
    if sort.startswith("-"):
        order = [term.desc(nulls_last=True) if hasattr(term, "desc") else f"-{term}" for term in order]
    else:
        order = [term.asc(nulls_last=True) if hasattr(term, "asc") else term for term in order]
    return rows.order_by(*order), sort


def _choice(value: str, options: Iterable[tuple[str, str]], label: str) -> str:
    options = list(options)
    if value and value not in {key for key, _ in options}:
        known = ", ".join(key for key, _ in options[:60]) or "none"
        raise BadQuery(f"Unknown {label} {value[:100]!r}. Known values: {known}.")
    return value


# -- benchmarks --------------------------------------------------------------------------------

BENCHMARK_SORTS = {
    "name": ["source__name", "collection", "numeric_id", "native_id"],
    "runs": [F("run_count"), "native_id"],
    "submitters": [F("submitter_count"), "native_id"],
    "latest": [F("last_observed"), "native_id"],
}


@dataclass
class BenchmarkList:
    rows: QuerySet
    filters: list[Filter]
    params: dict[str, str]
    sort: str


def benchmark_list(get: Any) -> BenchmarkList:
    """Benchmarks filtered by source, collection, tag, GPU and "has a KernelIndex rerun", with
    their run and submitter counts and latest run as stored at write time (runs.counts; 3
    queries for the filters' options; the list itself is a count and a page)."""
    sources = list(Source.objects.order_by("name").values_list("slug", "name"))
    # Each distinct pair once: 19 pairs among the 561 shipped benchmarks, each a JSON list to parse.
    facets = Benchmark.objects.order_by().values_list("collection", "tags").distinct()
    collections: set[str] = set()
    tags: set[str] = set()
    for collection, benchmark_tags in facets:
        if collection:
            collections.add(collection)
        tags.update(str(tag) for tag in benchmark_tags or [] if isinstance(tag, str))
    # Sorted once, for the filters' menus and for the error that lists the known values.
    collection_options = [(c, c) for c in sorted(collections)]
    tag_options = [(t, t) for t in sorted(tags)]
    gpus = gpu_products()
    rerun_options = [("yes", "has a KernelIndex rerun")]
    values = {
        "source": _choice(get.get("source", "").strip(), sources, "source"),
        "collection": _choice(get.get("collection", "").strip(), collection_options, "collection"),
        "tag": _choice(get.get("tag", "").strip(), tag_options, "tag"),
        "gpu": _choice(get.get("gpu", "").strip(), gpus.items(), "GPU"),
        "rerun": _choice(get.get("rerun", "").strip(), rerun_options, "rerun filter"),
    }
    # The long texts stay in the database: the list shows names, counts and each one's best run.
    rows = Benchmark.objects.select_related("source").defer("description", "reference_code", "definition")
    if values["source"]:
        rows = rows.filter(source__slug=values["source"])
    if values["collection"]:
        rows = rows.filter(collection=values["collection"])
    if values["tag"]:
        # The JSON text of the list holds '"tag"' (both backends): one LIKE, no per-row parsing.
        rows = rows.filter(tags__icontains=json.dumps(values["tag"]))
    if values["gpu"]:
        on_gpu = ComparisonGroup.objects.filter(hardware_product=gpus[values["gpu"]]).values("benchmark_id")
        rows = rows.filter(pk__in=on_gpu)
    if values["rerun"]:
        reruns = Run.objects.visible().filter(evidence_level=EvidenceLevel.KERNELINDEX_RERUN).values("benchmark_id")
        rows = rows.filter(pk__in=reruns)
    # The figures runs.counts keeps at every write, under the names the page uses.
    rows = rows.annotate(run_count=F("published_runs"), last_observed=F("last_observed_at"))
    rows, sort = _sorted(rows, get.get("sort", "name"), BENCHMARK_SORTS, "name")
    filters = [
        Filter("source", "source", sources, values["source"]),
        Filter("collection", "level or collection", collection_options, values["collection"]),
        Filter("tag", "tag", tag_options, values["tag"]),
        Filter("gpu", "GPU", sorted(gpus.items(), key=lambda item: item[1]), values["gpu"]),
        Filter("rerun", "KernelIndex rerun", rerun_options, values["rerun"]),
    ]
    return BenchmarkList(rows=rows, filters=filters, params=values, sort=sort)


# What the list and its download show of a best run (its link, value, GPU, "rank N of M", date).
BEST_RUN_COLUMNS = (
    *("public_id", "benchmark_id", "rank", "is_reference", "sol_score", "latency_ns", "observed_at"),
    *("group__ranking_metric", "group__hardware_product", "group__ranked_count"),
)


def best_runs(benchmarks: list[Benchmark]) -> None:
    """Give each benchmark ``best``: the #1 of its largest comparison group (most ranked runs;
    then the most recent), or None. 1 query for the whole list, not one per benchmark.

    Runs of different groups are never ranked together, so "best" is the leader of one group,
    named with its GPU and harness on the page."""
    ids = [benchmark.pk for benchmark in benchmarks]
    # Only the #1s of each benchmark's largest groups: a benchmark run on 17 GPUs has 17 #1s,
    # and a page of such benchmarks loaded thousands of runs to keep a hundred.
    largest = (
        ComparisonGroup.objects.filter(benchmark_id=OuterRef("benchmark_id"))
        .order_by("-ranked_count")
        .values("ranked_count")[:1]
    )
    top_groups = ComparisonGroup.objects.filter(benchmark_id__in=ids, ranked_count=Subquery(largest)).values("pk")
    leaders = (
        Run.objects.visible()
        # Through the groups, so each #1 is one lookup in the (group, rank) index rather than a
        # walk over every run of the benchmark.
        .filter(group_id__in=top_groups)
        .filter(rank=1)
        .select_related("group")
        .only(*BEST_RUN_COLUMNS)
        .order_by("benchmark_id", "-group__ranked_count", F("observed_at").desc(nulls_last=True), "public_id")
    )
    best: dict[int, Run] = {}
    for run in leaders:
        best.setdefault(run.benchmark_id, run)
    for benchmark in benchmarks:
        benchmark.best = best.get(benchmark.pk)


# -- GPUs --------------------------------------------------------------------------------------


@dataclass
class Gpu:
    slug: str
    product: str
    architecture: str
    run_count: int
    benchmark_count: int
    group_count: int
    source_count: int
    last_observed: Any
    leader_count: int = 0  # groups with a #1: the rows of the GPU page's best runs

    def get_absolute_url(self) -> str:
        return links.page_path("gpus", self.slug)


GPU_SORTS = {"name": "product", "runs": "run_count", "benchmarks": "benchmark_count", "latest": "last_observed"}


def gpu_list(sort: str = "name") -> tuple[list[Gpu], str]:
    """Every GPU product a comparison group names, with its architecture (kernelindex.gpus) and
    its counts: sums over its groups' stored figures (runs.counts), 1 query over the groups."""
    rows = (
        ComparisonGroup.objects.order_by()
        .values("hardware_product")
        .annotate(
            run_count=Coalesce(Sum("published_runs"), 0),
            benchmark_count=Count("benchmark", distinct=True),
            group_count=Count("pk", distinct=True),
            source_count=Count("source", distinct=True),
            last_observed=Max("last_observed_at"),
            leader_count=Count("pk", filter=Q(ranked_count__gt=0)),
        )
    )
    gpus: dict[str, Gpu] = {}
    for row in rows:
        product = row["hardware_product"]
        slug = gpu_slug(product)
        gpu = Gpu(
            slug=slug,
            product=product,
            architecture=architecture_for(product),
            run_count=row["run_count"],
            benchmark_count=row["benchmark_count"],
            group_count=row["group_count"],
            source_count=row["source_count"],
            last_observed=row["last_observed"],
            leader_count=row["leader_count"],
        )
        gpus.setdefault(slug, gpu)
    if sort.lstrip("-") not in GPU_SORTS:
        sort = "name"
    attribute = GPU_SORTS[sort.lstrip("-")]
    present = [g for g in gpus.values() if getattr(g, attribute) is not None]
    missing = [g for g in gpus.values() if getattr(g, attribute) is None]
    present.sort(key=lambda g: (getattr(g, attribute), g.product), reverse=sort.startswith("-"))
    return present + missing, sort


def gpu_best_runs(product: str) -> QuerySet[Run]:
    """The #1 of every comparison group on this GPU, one row per group (for ``run_table``)."""
    return Run.objects.visible().filter(group__hardware_product=product, rank=1).for_listing()


class GroupLeaders:
    """``gpu_best_runs`` in benchmark order (the GPU page's default), a page at a time, found
    from the groups: the page's groups in their benchmark's order, each one's #1 by its
    (group, rank) index, then those runs with their table's columns (2 queries a page).

    Ordering the #1 runs themselves by benchmark found all of the GPU's #1 runs and joined
    each to its table's columns before sorting: 2,108 rows for the first 50, 40 ms at a
    million runs. From the groups it reads the 50 and stops (1 ms)."""

    def __init__(self, product: str, source_slug: str, descending: bool, shown: QuerySet[Run]) -> None:
        leader = Run.objects.visible().filter(group_id=OuterRef("pk"), rank=1).order_by()
        groups = ComparisonGroup.objects.filter(hardware_product=product, ranked_count__gt=0)
        if source_slug:
            groups = groups.filter(source__slug=source_slug)
        native_id = F("benchmark__native_id")
        # Each group's #1 by its public id (unique): the order's tie-break and the page's key.
        self.public_ids = (
            groups.annotate(leader=Subquery(leader.values("public_id")[:1]))
            # As tables.order_for writes the "benchmark" sort: the public id breaks ties.
            .order_by(native_id.desc(nulls_last=True) if descending else native_id.asc(nulls_last=True), "leader")
            .values_list("leader", flat=True)
        )
        self.shown = shown

    def __getitem__(self, item: slice) -> list[Run]:
        public_ids = [public_id for public_id in self.public_ids[item] if public_id is not None]
        found = {run.public_id: run for run in self.shown.filter(public_id__in=public_ids)}
        return [found[public_id] for public_id in public_ids if public_id in found]


def gpu_leader_count(product: str, source_slug: str = "") -> int:
    """How many runs ``gpu_best_runs`` holds (of one source), from the groups' stored
    ``ranked_count`` (1 query on the groups): every group with a ranked run has exactly one #1,
    and only a published run is ranked. Counting the #1 runs themselves took 13 ms at a million."""
    groups = ComparisonGroup.objects.filter(hardware_product=product, ranked_count__gt=0)
    if source_slug:
        groups = groups.filter(source__slug=source_slug)
    return groups.count()


# -- sources and projects ----------------------------------------------------------------------


def source_list() -> list[Source]:
    """Every source with its runs, benchmarks, submitters, GPUs and latest run, as stored at
    write time (runs.counts; 1 query)."""
    return list(
        Source.objects.annotate(run_count=F("published_runs"), last_observed=F("last_observed_at")).order_by("name")
    )


PROJECT_SORTS = {
    "name": ["name"],
    "runs": [F("run_count"), "name"],
    "benchmarks": [F("benchmark_count"), "name"],
    "latest": [F("last_observed"), "name"],
}


def project_list(query: str, sort: str) -> tuple[QuerySet[Project], str]:
    """Projects whose name contains ``query``, with their runs, benchmarks, revisions and latest
    run as stored at write time (runs.counts; a count and a page)."""
    rows = Project.objects.all()
    if query:
        rows = rows.filter(name__icontains=query)
    rows = rows.annotate(run_count=F("published_runs"), last_observed=F("last_observed_at"))
    return _sorted(rows, sort, PROJECT_SORTS, "name")


# -- the cross-GPU view ------------------------------------------------------------------------


@dataclass
class Cell:
    run: Run
    value: float | None


@dataclass
class MatrixRow:
    label: str
    cells: list[Cell | None] = field(default_factory=list)
    is_reference: bool = False

    @property
    def covered(self) -> int:
        return sum(1 for cell in self.cells if cell is not None)


@dataclass
class Matrix:
    groups: list[ComparisonGroup]
    rows: list[MatrixRow]
    truncated: bool = False


def implementation_label(run: Run) -> str:
    """The name of what ran, as the run pages write it (project revision or submitter)."""
    from web.templatetags.kiformat import submitter

    return submitter(run)


def cross_gpu_matrix(benchmark: Benchmark) -> Matrix:
    """GPU (one column per comparison group) × implementation: each cell the implementation's
    best ranked run in that group, or the source's reference row (2 queries). Columns are
    separate rankings; nothing ranks across them."""
    groups = list(
        ComparisonGroup.objects.filter(benchmark=benchmark).order_by(
            "hardware_product", "family", "harness_name", "-harness_version"
        )[:MATRIX_GROUPS]
    )
    column = {group.pk: index for index, group in enumerate(groups)}
    runs = list(
        Run.objects.visible()
        .filter(group_id__in=list(column))
        .filter(Q(rank__lte=MATRIX_TOP) | Q(is_reference=True))
        .for_listing()
        .order_by("group_id", F("rank").asc(nulls_last=True), "public_id")[: MATRIX_ROWS + 1]
    )
    # A column holds its group's top MATRIX_TOP: a board of a thousand submitters made a page of
    # a thousand rows (0.4 s to render); each group's page has its whole ranking.
    truncated = len(runs) > MATRIX_ROWS or any(group.ranked_count > MATRIX_TOP for group in groups)
    rows: dict[str, MatrixRow] = {}
    by_pk = {group.pk: group for group in groups}
    for run in runs[:MATRIX_ROWS]:
        run.group = by_pk[run.group_id]  # the same object the header shows (ranked_count)
        label = implementation_label(run)
        row = rows.setdefault(label, MatrixRow(label=label, cells=[None] * len(groups), is_reference=run.is_reference))
        index = column[run.group_id]
        if row.cells[index] is None:  # ordered by rank: the first is the best
            row.cells[index] = Cell(run=run, value=getattr(run, run.group.ranking_metric))
    ordered = sorted(
        rows.values(),
        key=lambda row: (
            row.is_reference,
            -row.covered,
            min((cell.run.rank or 10**9) for cell in row.cells if cell is not None),
            row.label,
        ),
    )
    return Matrix(groups=groups, rows=ordered, truncated=truncated)
