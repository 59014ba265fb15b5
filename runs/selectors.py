"""Reads of the run index behind the pages and the API: each function states its query count.

Views fetch through these so that every page costs a fixed number of queries whatever the size
of a group; long lists are paginated or capped here, never in templates.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Count, F, Max, Q, QuerySet
from django.http import Http404

from kernelindex.inline import Inline
from kernelindex.prepared import Prepared, PreparedIn
from runs.models import (
    ELIGIBLE,
    LISTING_DEFERRED,
    Benchmark,
    ComparisonGroup,
    Environment,
    Project,
    Run,
    Source,
    Visibility,
)
from runs.ordering import newest_first
from runs.ranking import RankingRule

# Rows per page of a run list (rankings included), as the API's pages: rendering a row costs about
# half a millisecond of template time, and at 100 rows the lists missed 100 ms at a million runs.
PAGE_SIZE = 50
SEARCH_LIMIT = 20
TOP_PER_GROUP = 5


def gpu_products() -> list[str]:
    """Every GPU product a comparison group names, sorted (1 query), read from the groups'
    product index one product at a time: the next product after the last one found, until
    there is none. ``SELECT DISTINCT`` read every group on each request that shows the GPU
    filter (6.3 ms of PostgreSQL's time for 9,354 groups and 19 products, shipped data)."""
    groups = connection.ops.quote_name(ComparisonGroup._meta.db_table)

    def after(previous: str) -> str:
        return (
            f"(SELECT g.hardware_product FROM {groups} g WHERE g.hardware_product > {previous}"
            " ORDER BY g.hardware_product LIMIT 1)"
        )

    sql = (
        "WITH RECURSIVE walk (product) AS ("
        f" SELECT (SELECT g.hardware_product FROM {groups} g ORDER BY g.hardware_product LIMIT 1)"
        f" UNION ALL SELECT {after('w.product')} FROM walk w WHERE w.product IS NOT NULL"
        ") SELECT product FROM walk WHERE product IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [product for (product,) in cursor.fetchall()]


def one_of(column: str, ids: list[int]) -> dict[str, Any]:
    """A run filter on ``column`` given the ids of the related rows a filter names (a source's,
    a GPU's environments), looked up first so PostgreSQL plans with the column's statistics:
    through a join it could not tell a 33-run source from a 977,300-run one, and walked the
    newest-first index past most runs to fill a page of an old one (seconds at 1,000,000 runs).
    One id is an equality, which walks the index leading with the column in the list's order;
    "= ANY(array)" reads that index but not in its order. Either way the ids are written into
    the SQL (``Inline``, ``kernelindex.lookups.AnyOf``), so a prepared statement is planned for
    its own ids, not reused for another filter's."""
    return {column: Inline(ids[0])} if len(ids) == 1 else {f"{column}__any": ids}


# How a source writes its own run ids and revisions, where it has a convention
# (SOL-ExecBench: submission 27772 → "submission/27772", revision "submission-27772").
_EXTERNAL_ID_FORMATS = {"sol-execbench": ("submission/{id}", "submission-{id}")}


class RunGone(Exception):
    """A hidden or retracted run: its page is a tombstone (410)."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.public_id)
        self.run = run


def run_queryset() -> QuerySet[Run]:
    """Runs with everything the run page shows joined in: the documents a list leaves out too
    (the run page, the compare page, a run's JSON twin)."""
    return Run.objects.for_listing().defer(None).select_related("benchmark__workload", "workload")


# The run page's query joins nine tables: compiled once (kernelindex.prepared), not per request.
_run_by_id = Prepared(lambda public_id: run_queryset().filter(public_id=public_id)[:1], public_id=str)


def run_get(public_id: str) -> Run:
    """The run with this public id, with everything its page shows joined in (1 query).

    Unknown id → Http404; hidden or retracted → RunGone (the view answers 410)."""
    return published_run(_run_by_id(public_id=public_id), public_id)


def published_run(found: list[Run], public_id: str) -> Run:
    """The one run a query for ``public_id`` found: Http404 when none, RunGone when it is
    hidden or retracted."""
    if not found:
        raise Http404(f"No run {public_id}")
    run = found[0]
    if run.visibility != Visibility.PUBLISHED:
        raise RunGone(run)
    return run


def leader_rank(run: Run) -> int:
    """The rank of the run a run is compared with by default: #1, or #2 for #1 itself."""
    return 2 if run.rank == 1 else 1


def group_leader(run: Run) -> Run | None:
    """#1 of the run's comparison group, or #2 when the run is #1 itself (1 query)."""
    found = _leader(group_id=run.group_id, rank=leader_rank(run))
    return found[0] if found else None


def has_leader(run: Run) -> bool:
    """Whether the run's group holds the run ``group_leader`` would load (no query): a group's
    ranks are 1 to its stored ``ranked_count``, one run each (runs.ranking.compute_ranks)."""
    return run.group.ranked_count >= leader_rank(run)


_leader = Prepared(
    lambda group_id, rank: run_queryset().filter(group_id=group_id, rank=rank)[:1], group_id=int, rank=int
)


def identity_labels(run: Run) -> dict[str, str]:
    """Implementation, project, revision and external id as the page shows them.

    The implementation document wins; without it the run's submitter (or the submitter part of
    the run's title, "<submitter> · <benchmark> · <GPU>") stands for the implementation, and a
    source's own convention names the revision."""
    implementation = run.implementation
    submitter = run.submitter or (run.title.split(" · ")[0] if " · " in run.title else "")
    if implementation is not None:
        submitter = implementation.submitter or submitter
    external_format, revision_format = ("{id}", "")
    if run.external_id.isdigit():  # a source's own numbering, e.g. SOL-ExecBench submissions
        external_format, revision_format = _EXTERNAL_ID_FORMATS.get(run.source.slug, ("{id}", ""))
    revision = implementation.revision if implementation is not None and implementation.revision else ""
    if not revision and revision_format:
        revision = revision_format.format(id=run.external_id)
    project = implementation.project.name if implementation is not None and implementation.project else submitter
    return {
        "implementation": submitter,
        "project": project,
        "revision": revision,
        "external_id": external_format.format(id=run.external_id),
    }


# -- ranking -----------------------------------------------------------------------------------

# ?sort= values → the columns they order by (a leading "-" reverses).
SORTS = {
    "rank": None,  # the ranking rule's own order
    "submitter": "submitter",
    "score": "sol_score",
    "latency": "latency_ns",
    "speedup": "avg_speedup",
    "observed": "observed_at",
}


_CONDITION_WORDS = {
    ("status", "passed"): "the source marked it passed",
    ("visibility", "published"): "it is published (neither hidden nor retracted)",
    ("quarantined", False): "it is not quarantined",
    ("is_reference", False): "it is not a reference row",
}


def eligibility_conditions() -> list[str]:
    """The ranking's eligibility rule in words, read from the one rule (runs.models.ELIGIBLE),
    so the page cannot drift from what ranking does."""
    conditions = dict(ELIGIBLE.children)
    words = [text for (lookup, value), text in _CONDITION_WORDS.items() if conditions.get(lookup, object()) == value]
    known = {(lookup, value) for lookup, value in _CONDITION_WORDS}
    words += [f"{lookup} is {value}" for lookup, value in conditions.items() if (lookup, value) not in known]
    return words


def group_queryset() -> QuerySet[ComparisonGroup]:
    """Comparison groups with the benchmark and sources their pages name."""
    return ComparisonGroup.objects.select_related("benchmark", "benchmark__source", "source")


_group_by_key = Prepared(lambda key: group_queryset().filter(key=key)[:1], key=str)


def group_get(key: str) -> ComparisonGroup:
    return found_group(_group_by_key(key=key), key)


def found_group(found: list[ComparisonGroup], key: str) -> ComparisonGroup:
    """The one group a query for ``key`` found; Http404 when none."""
    if not found:
        raise Http404(f"No comparison group {key}")
    return found[0]


def group_rule(group: ComparisonGroup) -> RankingRule:
    return RankingRule(group.ranking_metric, group.ranking_direction, group.best_per)


def metric_order(group: ComparisonGroup, descending: bool) -> list[Any]:
    metric = F(group.ranking_metric)
    return [
        metric.desc(nulls_last=True) if descending else metric.asc(nulls_last=True),
        F("observed_at").asc(nulls_last=True),
        "public_id",
    ]


def ranking_rows(group: ComparisonGroup, *, sort: str = "rank", show_all: bool = False) -> QuerySet[Run]:
    """The ranking's rows: ranked runs with the source's reference rows in place (unranked);
    with ``show_all`` every published run of the group, with ``eligible`` annotated."""
    # A group's rows share its source, benchmark and group (they are its key): those come from
    # ``group`` (attach_group) instead of being joined and built again for every row.
    rows = (
        Run.objects.filter(group=group)
        .visible()
        .select_related("environment", "protocol", "implementation", "implementation__project")
        .defer(*(name for name in LISTING_DEFERRED if not name.startswith(("benchmark__", "group__"))))
        .with_eligibility()
    )
    if not show_all:
        rows = rows.filter(Q(rank__isnull=False) | Q(is_reference=True))
    name = sort.lstrip("-")
    reverse = sort.startswith("-")
    column = SORTS.get(name)
    if column is None:
        return rows.order_by(*metric_order(group, (group.ranking_direction == "desc") != reverse))
    order = F(column).desc(nulls_last=True) if reverse else F(column).asc(nulls_last=True)
    return rows.order_by(order, "public_id")


_GROUP, _SOURCE, _BENCHMARK = (Run._meta.get_field(name) for name in ("group", "source", "benchmark"))


def attach_group(rows: list[Run], group: ComparisonGroup) -> list[Run]:
    """Give rows of ``ranking_rows`` their group, its source and benchmark (no query when
    ``group`` came from ``group_get``). The rows are the group's runs, so their keys already name
    these three (a group belongs to one benchmark of one source): only the related-object caches
    are set, as ``select_related`` sets them. Assigning through the descriptors checked and set
    the keys again, 6% of a ranking page."""
    source, benchmark = group.source, group.benchmark
    for run in rows:
        _GROUP.set_cached_value(run, group)
        _SOURCE.set_cached_value(run, source)
        _BENCHMARK.set_cached_value(run, benchmark)
    return rows


# A list counts at most this many rows: COUNT(*) over a million runs took longer than the
# whole page may. Beyond it the pager says "more than" and stops at the cap, as large indexes'
# search pages do; filters narrow a list below it.
COUNT_CAP = 10_000


class CappedPaginator(Paginator):
    """A Paginator whose count stops at ``COUNT_CAP`` (``capped`` says it did): one bounded
    ``SELECT COUNT(*) FROM (… LIMIT cap + 1)`` and pages up to the cap, never a full count."""

    cap = COUNT_CAP

    def __init__(self, object_list: Any, per_page: int, *, known_count: int | None = None, **kwargs: Any) -> None:
        super().__init__(object_list, per_page, **kwargs)
        self.known_count = known_count

    @cached_property
    def _bounded_count(self) -> int:
        if self.known_count is not None:  # the stored counts already say it: no COUNT query
            return min(self.known_count, self.cap + 1)
        return self.object_list.order_by()[: self.cap + 1].count()

    @property
    def capped(self) -> bool:
        return self._bounded_count > self.cap

    @cached_property
    def count(self) -> int:  # type: ignore[override]
        return min(self._bounded_count, self.cap)

    @property
    def count_label(self) -> str:
        """The count as a list's caption writes it: "1234", or "10000+" at the cap."""
        return f"{self.count}+" if self.capped else str(self.count)


def paginate(queryset: QuerySet, page: Any, per_page: int = PAGE_SIZE, *, known_count: int | None = None) -> Page:
    """A page of a list (2 queries: a count bounded by COUNT_CAP, and the rows; 1 when the
    caller knows the count exactly from the stored figures); a bad page number gives the
    last/first."""
    return CappedPaginator(queryset, per_page, known_count=known_count).get_page(page)


# -- benchmarks, browse ------------------------------------------------------------------------


_benchmark_by_id = Prepared(
    lambda source, native_id: Benchmark.objects.select_related("source", "workload").filter(
        source__slug=source, native_id=native_id
    )[:1],
    source=str,
    native_id=str,
)


def benchmark_get(source_slug: str, native_id: str) -> Benchmark:
    found = _benchmark_by_id(source=source_slug, native_id=native_id)
    if not found:
        raise Http404(f"No benchmark {source_slug}/{native_id}")
    return found[0]


_benchmark_groups = Prepared(
    lambda benchmark_id: (
        ComparisonGroup.objects.filter(benchmark_id=benchmark_id)
        .defer("key_document")
        .annotate(run_count=F("published_runs"))
        .order_by("hardware_product", "harness_name", "-harness_version")[:50]
    ),
    benchmark_id=int,
)

# What the benchmark page shows of a group's top runs (rank, run, SOL, latency, submitter through
# identity_labels, observed; the summary card's statistic): its rows load only these columns.
TOP_ROW_COLUMNS = (
    *("public_id", "group", "rank", "is_reference", "sol_score", "latency_ns", "primary_statistic", "submitter"),
    *("title", "external_id", "observed_at", "evidence_level", "source__slug", "implementation__submitter"),
    *("implementation__revision", "implementation__project__name"),
)


# The top runs of a benchmark's groups, compiled once per number of groups.
_top_runs = PreparedIn(
    lambda group_ids: (
        Run.objects.filter(group__in=group_ids, rank__lte=TOP_PER_GROUP)
        .visible()
        .select_related("source", "implementation__project")
        .only(*TOP_ROW_COLUMNS)
        .order_by("group_id", "rank")
    )
)


def benchmark_groups(benchmark: Benchmark) -> list[dict[str, Any]]:
    """Each comparison group of a benchmark with its run count and top runs (2 queries)."""
    groups = _benchmark_groups(benchmark_id=benchmark.pk)
    top = _top_runs([g.pk for g in groups])
    by_pk = {g.pk: g for g in groups}
    by_group: dict[int, list[Run]] = {}
    for run in top:
        run.group = by_pk[run.group_id]  # loaded above: "rank 2 of 40" reads its ranked_count
        run.benchmark = benchmark
        by_group.setdefault(run.group_id, []).append(run)
    return [{"group": g, "top": by_group.get(g.pk, [])} for g in groups]


# What a row of the run lists shows (web.templatetags.runrows: link, latency, rank "N of M",
# benchmark, submitter through identity_labels, the group's or the run's own GPU and harness,
# SOL, observed, evidence): the lists load only these of the run's and its joined rows' columns.
# The other 30 run columns and the joined rows' ~60 cost their compiling and a conversion each.
RUN_ROW_COLUMNS = (
    *("public_id", "latency_ns", "primary_statistic", "rank", "is_reference", "sol_score", "observed_at"),
    *("evidence_level", "submitter", "title", "external_id", "source__slug"),
    *("benchmark__native_id", "benchmark__title", "benchmark__source__slug", "group__key"),
    *("group__hardware_product", "group__harness_name", "group__harness_version", "group__ranked_count"),
    *("environment__product", "protocol__harness_name", "protocol__harness_version"),
    *("implementation__submitter", "implementation__revision", "implementation__project__name"),
)


def home_lists() -> dict[str, Any]:
    """Sources with run counts, the most-run benchmarks, the latest runs (3 queries; the counts
    are stored at write time by runs.counts, the latest runs read the run_newest_first index)."""
    return {
        "sources": list(Source.objects.annotate(run_count=F("published_runs")).order_by("name")),
        "benchmarks": list(
            Benchmark.objects.for_listing()
            .annotate(run_count=F("published_runs"))
            .filter(published_runs__gt=0)
            .order_by("-published_runs", "native_id")[:12]
        ),
        "latest_runs": latest_runs(),
    }


def source_get(slug: str) -> Source:
    source = Source.objects.filter(slug=slug).first()
    if source is None:
        raise Http404(f"No source {slug}")
    return source


def source_benchmarks(source: Source) -> QuerySet[Benchmark]:
    """The source's benchmarks, and the benchmarks of other sources it has runs on (KernelIndex's
    reruns belong to SOL-ExecBench's benchmarks): one query with a subquery over the source's
    comparison groups (every run's group has the run's source), not over its runs."""
    return (
        Benchmark.objects.filter(
            Q(source=source) | Q(pk__in=ComparisonGroup.objects.filter(source=source).values("benchmark_id"))
        )
        .select_related("source")
        .annotate(run_count=F("published_runs"))
        .order_by("collection", "numeric_id", "native_id")
    )


def latest_runs(**filters: Any) -> list[Run]:
    return list(
        Run.objects.visible().filter(**filters).for_listing().only(*RUN_ROW_COLUMNS).order_by(*newest_first())[:20]
    )


def project_get(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise Http404(f"No project {slug}")
    return project


def project_revisions(project: Project) -> list[Any]:
    """The project's revisions (implementations), oldest first, with run counts (1 query)."""
    return list(
        project.implementations.annotate(
            run_count=Count("runs", filter=Q(runs__visibility=Visibility.PUBLISHED)),
            last_observed=Max("runs__observed_at"),
        ).order_by("created_at", "pk")[:200]
    )


def project_runs(project: Project) -> QuerySet[Run]:
    return Run.objects.visible().filter(implementation__project=project).for_listing().order_by(*newest_first())


def environment_get(digest: str) -> Environment:
    environment = Environment.objects.filter(digest=digest).first()
    if environment is None:
        raise Http404(f"No environment {digest}")
    return environment


def environment_runs(environment: Environment) -> QuerySet[Run]:
    return Run.objects.visible().filter(environment=environment).for_listing().order_by(*newest_first())


def search(query: str) -> dict[str, list[Any]]:
    """Benchmarks (native id, title), submitters, projects and GPUs matching ``query``
    (4 queries; none for an empty query). Each list is capped at SEARCH_LIMIT."""
    query = " ".join(query.split())[:200]
    if not query:
        return {"benchmarks": [], "submitters": [], "projects": [], "environments": []}
    # "kv cache" should find "062_kv_cache_update…" as well as "KV cache update…".
    terms = query.split(" ")
    benchmark_q = Q()
    for term in terms:
        benchmark_q &= Q(title__icontains=term) | Q(native_id__icontains=term) | Q(collection__iexact=term)
    return {
        "benchmarks": list(
            Benchmark.objects.for_listing()
            .filter(benchmark_q)
            .annotate(run_count=F("published_runs"))
            .order_by("-run_count", "native_id")[:SEARCH_LIMIT]
        ),
        "submitters": list(
            Run.objects.visible()
            .filter(submitter__icontains=query)
            .values("submitter")
            .annotate(run_count=Count("pk"))
            .order_by("-run_count", "submitter")[:SEARCH_LIMIT]
        ),
        # Hidden means hidden: projects and GPUs only hidden or retracted runs use are not listed.
        "projects": list(Project.objects.public().filter(name__icontains=query).order_by("name")[:SEARCH_LIMIT]),
        "environments": list(
            Environment.objects.public()
            .filter(Q(product__icontains=query) | Q(architecture__iexact=query))
            .annotate(run_count=F("published_runs"))
            .order_by("product", "-run_count")[:SEARCH_LIMIT]
        ),
    }


def submitter_runs(submitter: str) -> QuerySet[Run]:
    return Run.objects.visible().filter(submitter=submitter).for_listing().order_by(*newest_first())
