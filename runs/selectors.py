"""Read queries behind the pages (and, later, the API): each function states its query count.

Views fetch through these so that every page costs a fixed number of queries whatever the size
of a group; long lists are paginated or capped here, never in templates.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Max, Prefetch, Q, QuerySet
from django.http import Http404

from runs import rerun_bundles
from runs.models import (
    ELIGIBLE,
    Benchmark,
    ComparisonGroup,
    Environment,
    Project,
    Run,
    RunRevision,
    Source,
    Visibility,
    Workload,
)
from runs.ranking import RankingRule

PAGE_SIZE = 100
SEARCH_LIMIT = 20
TOP_PER_GROUP = 5

# What a correctness comparator checks, for comparators the sources name but do not describe.
COMPARATOR_DESCRIPTIONS = {
    "sol_execbench_eval": "Correctness must pass on every case in the SOL evaluation stack.",
    "kernelindex_allclose": "Every case is compared with the definition's reference output within its tolerance.",
}

# How a source writes its own run ids and revisions, where it has a convention
# (SOL-ExecBench: submission 27772 → "submission/27772", revision "submission-27772").
_EXTERNAL_ID_FORMATS = {"sol-execbench": ("submission/{id}", "submission-{id}")}


class RunGone(Exception):
    """A hidden or retracted run: its page is a tombstone (410)."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.public_id)
        self.run = run


def _run_queryset() -> QuerySet[Run]:
    return Run.objects.for_listing().select_related("benchmark__workload", "workload")


def run_get(public_id: str) -> Run:
    """The run with this public id, with everything its page shows joined in (1 query).

    Unknown id → Http404; hidden or retracted → RunGone (the view answers 410)."""
    run = _run_queryset().filter(public_id=public_id).first()
    if run is None:
        raise Http404(f"No run {public_id}")
    if run.visibility != Visibility.PUBLISHED:
        raise RunGone(run)
    return run


def group_leader(run: Run) -> Run | None:
    """#1 of the run's comparison group, or #2 when the run is #1 itself (1 query)."""
    wanted = 2 if run.rank == 1 else 1
    return _run_queryset().filter(group_id=run.group_id, rank=wanted).first()


# -- the run page ------------------------------------------------------------------------------


@dataclass
class CaseRow:
    index: int | str
    label: str
    axes: dict[str, Any]
    latency_ns: float | None = None
    baseline_ns: float | None = None
    sol_ns: float | None = None
    status: str = ""
    timer: str = ""  # how the case was timed, where the run says (KernelIndex reruns)
    detail: str = ""  # why the case failed, where the run says


def _time_ns(case: dict[str, Any], ns_keys: tuple[str, ...], ms_keys: tuple[str, ...]) -> float | None:
    """A per-case time from a workload or run case, whichever way its document names it."""
    for key in ns_keys:
        value = case.get(key)
        if isinstance(value, dict):
            value = value.get("median", value.get("mean"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    for key in ms_keys:
        value = case.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) * 1e6
    return None


_LATENCY_KEYS = (("latencyNs", "medianNs", "meanNs"), ("latencyMs", "latency_ms"))
_BASELINE_KEYS = (
    ("baselineNs", "baselineLatencyNs", "scoringBaselineNs"),
    ("baselineMs", "baselineLatencyMs", "baseline_latency_ms"),
)
_SOL_KEYS = (("solNs", "speedOfLightNs", "solLatencyNs"), ("solMs", "sol_ms"))


def case_rows(run: Run | None, workload: Workload | None) -> list[CaseRow]:
    """The workload's cases joined with the run's per-case results (by id, else by index);
    without a run, the workload's cases alone."""
    run_cases = [c for c in run.spec.get("cases", []) if isinstance(c, dict)] if run is not None else []
    by_id = {str(c["id"]): c for c in run_cases if c.get("id") is not None}
    by_index = {c["index"]: c for c in run_cases if c.get("index") is not None}
    source = workload.cases if workload is not None else run_cases
    rows: list[CaseRow] = []
    for position, case in enumerate(source):
        if not isinstance(case, dict):
            continue
        index = case.get("index", position)
        result = by_id.get(str(case.get("id"))) or by_index.get(index) or {}
        axes = case.get("axes") if isinstance(case.get("axes"), dict) else {}
        rows.append(
            CaseRow(
                index=index,
                label=str(case.get("id") or index),
                axes=axes,
                latency_ns=_time_ns(result, *_LATENCY_KEYS),
                baseline_ns=_time_ns(case, *_BASELINE_KEYS) or _time_ns(result, *_BASELINE_KEYS),
                sol_ns=_time_ns(case, *_SOL_KEYS) or _time_ns(result, *_SOL_KEYS),
                status=str(result.get("status", "")),
                timer=str(result.get("timer") or ""),
                detail=str(result.get("detail") or "") if str(result.get("status", "")).upper() != "PASSED" else "",
            )
        )
    return rows


def case_count(run: Run) -> int | None:
    workload = run.shown_workload
    if workload is not None and workload.case_count:
        return workload.case_count
    if run.spec.get("cases"):
        return len(run.spec["cases"])
    return run.fast_1_total


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


@dataclass
class RunPage:
    run: Run
    leader: Run | None
    attestations: list[Any]
    flags: list[Any]
    cases: list[CaseRow]
    identity: dict[str, str]
    comparator: str
    comparator_description: str
    case_count: int | None
    correctness_policy: str = ""
    correctness_policy_items: list[tuple[str, str]] = field(default_factory=list)
    cases_passed: int = 0
    cases_reported: int = 0
    measurements: list[tuple[str, Any]] = field(default_factory=list)
    history: list[HistoryRow] = field(default_factory=list)  # latest revisions, newest first
    rerun: rerun_bundles.RerunFacts | None = None  # how KernelIndex measured it, for its own reruns
    # A source's reference row: KernelIndex's reruns of its code; a rerun: the rows it re-measured.
    related: list[Run] = field(default_factory=list)


def _policy_text(policy: Any) -> str:
    """A correctness policy written as one sentence; structured ones go through _policy_items."""
    return policy if isinstance(policy, str) else ""


def _policy_items(policy: Any) -> list[tuple[str, str]]:
    """A structured correctness policy as (field, text) rows; nested values as compact JSON."""
    if not isinstance(policy, dict):
        return []
    rows = []
    for key, value in policy.items():
        if isinstance(value, str):
            text = value
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            text = ", ".join(value)
        elif isinstance(value, dict) and all(not isinstance(item, (dict, list)) for item in value.values()):
            # e.g. tolerance defaults: "max_atol 0.01, max_rtol 0.01, …, max_error_cap none"
            text = ", ".join(f"{name} {_scalar(item)}" for name, item in value.items())
        else:
            text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        rows.append((str(key), text))
    return rows


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _published_attestations(run: Run) -> list[Any]:
    """Published attestations, oldest first (1 query); each gets the run already loaded, so
    showing its ratio to the run's latency costs no query per attestation."""
    attestations = list(run.attestations.published().order_by("created_at", "pk"))
    for attestation in attestations:
        attestation.run = run
    return attestations


# -- revision history ---------------------------------------------------------------------------

HISTORY_LIMIT = 20
# API submissions record "api: <user> (token <prefix>…)"; pages name the user, not the token.
_TOKEN_NOTE = re.compile(r"\s*\(token [^)]*\)\s*$")


@dataclass
class HistoryRow:
    """One RunRevision as the pages show it: who changed the run, what and why."""

    number: int
    created_at: Any
    actor: str
    reason: str
    changed: list[str]  # names of the fields that changed; empty for the first revision
    digest: str
    run: Run | None = None  # on a project's page, which run


def _history_row(revision: RunRevision, *, with_run: bool = False) -> HistoryRow:
    changes = revision.changes if isinstance(revision.changes, dict) else {}
    return HistoryRow(
        number=revision.number,
        created_at=revision.created_at,
        actor=_TOKEN_NOTE.sub("", revision.actor_label) or "—",
        reason=revision.reason,
        # Sorted: PostgreSQL's jsonb does not keep the order the import wrote them in.
        changed=sorted(changes),
        digest=revision.digest,
        run=revision.run if with_run else None,
    )


def run_history(run: Run) -> list[HistoryRow]:
    """The run's latest HISTORY_LIMIT revisions, newest first (1 query; ``run.revision`` is
    their number, so the page can say how many are older without counting them)."""
    revisions = RunRevision.objects.filter(run=run).defer("document").order_by("-number")[:HISTORY_LIMIT]
    return [_history_row(revision) for revision in revisions]


def project_history(project: Project) -> list[HistoryRow]:
    """The latest HISTORY_LIMIT revisions of the project's published runs, newest first, each
    with its run (1 query; the documents stay in the database)."""
    revisions = (
        RunRevision.objects.filter(run__implementation__project=project, run__visibility=Visibility.PUBLISHED)
        .select_related("run")
        .defer("document", "run__document")
        .order_by("-created_at", "-pk")[:HISTORY_LIMIT]
    )
    return [_history_row(revision, with_run=True) for revision in revisions]


def run_page(public_id: str) -> RunPage:
    """Everything the run page shows, in 5 queries: the run with its documents, the #1 of its
    group, its published attestations, its published flags, its latest revisions; plus 1 for a run that KernelIndex
    re-measured or that is such a rerun (``rerun_bundles.related_runs``: the other side of the link,
    which no join of the run's own row can reach). Other runs spend no query on it."""
    run = run_get(public_id)
    protocol_spec = run.protocol.spec
    correctness = protocol_spec.get("correctness") if isinstance(protocol_spec.get("correctness"), dict) else {}
    comparator = str(correctness.get("comparator", ""))
    run_cases = [c for c in run.spec.get("cases", []) if isinstance(c, dict)]
    latency = run.spec.get("timing", {}).get("latencyNs", {})
    return RunPage(
        run=run,
        leader=group_leader(run),
        attestations=_published_attestations(run),
        flags=list(run.reports.public_flags().order_by("created_at")),
        cases=case_rows(run, run.shown_workload),
        identity=identity_labels(run),
        comparator=comparator,
        comparator_description=str(correctness.get("description") or COMPARATOR_DESCRIPTIONS.get(comparator, "")),
        case_count=case_count(run),
        correctness_policy=_policy_text(correctness.get("policy")),
        correctness_policy_items=_policy_items(correctness.get("policy")),
        cases_passed=sum(1 for c in run_cases if str(c.get("status", "")).lower() == "passed"),
        cases_reported=len(run_cases),
        measurements=list(latency.items()) if isinstance(latency, dict) else [],
        history=run_history(run),
        rerun=rerun_bundles.rerun_facts(run),
        related=list(rerun_bundles.related_runs(run)),
    )


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


def group_get(key: str) -> ComparisonGroup:
    group = ComparisonGroup.objects.select_related("benchmark", "benchmark__source", "source").filter(key=key).first()
    if group is None:
        raise Http404(f"No comparison group {key}")
    return group


def group_rule(group: ComparisonGroup) -> RankingRule:
    return RankingRule(group.ranking_metric, group.ranking_direction, group.best_per)


def _metric_order(group: ComparisonGroup, descending: bool) -> list[Any]:
    metric = F(group.ranking_metric)
    return [
        metric.desc(nulls_last=True) if descending else metric.asc(nulls_last=True),
        F("observed_at").asc(nulls_last=True),
        "public_id",
    ]


def ranking_rows(group: ComparisonGroup, *, sort: str = "rank", show_all: bool = False) -> QuerySet[Run]:
    """The ranking's rows: ranked runs with the source's reference rows in place (unranked);
    with ``show_all`` every published run of the group, with ``eligible`` annotated."""
    rows = Run.objects.filter(group=group).visible().for_listing().with_eligibility()
    if not show_all:
        rows = rows.filter(Q(rank__isnull=False) | Q(is_reference=True))
    name = sort.lstrip("-")
    reverse = sort.startswith("-")
    column = SORTS.get(name)
    if column is None:
        return rows.order_by(*_metric_order(group, (group.ranking_direction == "desc") != reverse))
    order = F(column).desc(nulls_last=True) if reverse else F(column).asc(nulls_last=True)
    return rows.order_by(order, "public_id")


def with_public_flags(rows: QuerySet[Run]) -> QuerySet[Run]:
    """Rows with ``public_flags``: each run's flags published by moderators, oldest first.
    One query for a whole page of rows, not one per row; the reports' private fields (the
    description, the reporter's email) are not loaded."""
    from attestations.models import IssueReport  # attestations depends on runs, not the reverse

    flags = (
        IssueReport.objects.public_flags()
        .only("run", "category", "public_summary", "created_at", "handled_at")
        .order_by("created_at", "pk")
    )
    return rows.prefetch_related(Prefetch("reports", queryset=flags, to_attr="public_flags"))


def paginate(queryset: QuerySet, page: Any, per_page: int = PAGE_SIZE) -> Page:
    """A page of a list (2 queries: count and rows); a bad page number gives the last/first."""
    return Paginator(queryset, per_page).get_page(page)


# -- benchmarks, browse ------------------------------------------------------------------------


def benchmark_get(source_slug: str, native_id: str) -> Benchmark:
    benchmark = (
        Benchmark.objects.select_related("source", "workload")
        .filter(source__slug=source_slug, native_id=native_id)
        .first()
    )
    if benchmark is None:
        raise Http404(f"No benchmark {source_slug}/{native_id}")
    return benchmark


def benchmark_groups(benchmark: Benchmark) -> list[dict[str, Any]]:
    """Each comparison group of a benchmark with its run count and top runs (2 queries)."""
    groups = list(
        ComparisonGroup.objects.filter(benchmark=benchmark)
        .annotate(run_count=Count("runs", filter=Q(runs__visibility=Visibility.PUBLISHED)))
        .order_by("hardware_product", "harness_name", "-harness_version")[:50]
    )
    top = (
        Run.objects.filter(group__in=[g.pk for g in groups], rank__lte=TOP_PER_GROUP)
        .visible()
        .for_listing()
        .order_by("group_id", "rank")
    )
    by_group: dict[int, list[Run]] = {}
    for run in top:
        by_group.setdefault(run.group_id, []).append(run)
    return [{"group": g, "top": by_group.get(g.pk, [])} for g in groups]


def home_lists() -> dict[str, Any]:
    """Sources with run counts, the most-run benchmarks, the latest runs (3 queries)."""
    published = Q(runs__visibility=Visibility.PUBLISHED)
    return {
        "sources": list(Source.objects.annotate(run_count=Count("runs", filter=published)).order_by("name")),
        "benchmarks": list(
            Benchmark.objects.for_listing()
            .annotate(run_count=Count("runs", filter=published))
            .filter(run_count__gt=0)
            .order_by("-run_count", "native_id")[:12]
        ),
        "latest_runs": list(Run.objects.visible().for_listing().order_by(F("observed_at").desc(nulls_last=True))[:20]),
    }


def source_get(slug: str) -> Source:
    source = Source.objects.filter(slug=slug).first()
    if source is None:
        raise Http404(f"No source {slug}")
    return source


def source_benchmarks(source: Source) -> QuerySet[Benchmark]:
    """The source's benchmarks, and the benchmarks of other sources it has runs on (KernelIndex's
    reruns belong to SOL-ExecBench's benchmarks): one query with a subquery."""
    return (
        Benchmark.objects.filter(Q(source=source) | Q(pk__in=Run.objects.filter(source=source).values("benchmark_id")))
        .select_related("source")
        .annotate(run_count=Count("runs", filter=Q(runs__visibility=Visibility.PUBLISHED)))
        .order_by("collection", "numeric_id", "native_id")
    )


def latest_runs(**filters: Any) -> list[Run]:
    return list(
        Run.objects.visible().filter(**filters).for_listing().order_by(F("observed_at").desc(nulls_last=True))[:20]
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
    return (
        Run.objects.visible()
        .filter(implementation__project=project)
        .for_listing()
        .order_by(F("observed_at").desc(nulls_last=True), "public_id")
    )


def environment_get(digest: str) -> Environment:
    environment = Environment.objects.filter(digest=digest).first()
    if environment is None:
        raise Http404(f"No environment {digest}")
    return environment


def environment_runs(environment: Environment) -> QuerySet[Run]:
    return (
        Run.objects.visible()
        .filter(environment=environment)
        .for_listing()
        .order_by(F("observed_at").desc(nulls_last=True), "public_id")
    )


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
            .annotate(run_count=Count("runs", filter=Q(runs__visibility=Visibility.PUBLISHED)))
            .order_by("-run_count", "native_id")[:SEARCH_LIMIT]
        ),
        "submitters": list(
            Run.objects.visible()
            .filter(submitter__icontains=query)
            .values("submitter")
            .annotate(run_count=Count("pk"))
            .order_by("-run_count", "submitter")[:SEARCH_LIMIT]
        ),
        "projects": list(Project.objects.filter(name__icontains=query).order_by("name")[:SEARCH_LIMIT]),
        "environments": list(
            Environment.objects.filter(Q(product__icontains=query) | Q(architecture__iexact=query))
            .annotate(run_count=Count("runs", filter=Q(runs__visibility=Visibility.PUBLISHED)))
            .order_by("product", "-run_count")[:SEARCH_LIMIT]
        ),
    }


def submitter_runs(submitter: str) -> QuerySet[Run]:
    return (
        Run.objects.visible()
        .filter(submitter=submitter)
        .for_listing()
        .order_by(F("observed_at").desc(nulls_last=True), "public_id")
    )


# -- compare -----------------------------------------------------------------------------------

_DIMENSIONS = (
    ("benchmark", "benchmark"),
    ("hardware", "GPU"),
    ("harness.version", "harness version"),
    ("harness.name", "harness"),
    ("family", "comparability family"),
    ("source", "source"),
)


def differing_dimensions(a: ComparisonGroup, b: ComparisonGroup) -> list[tuple[str, str, str]]:
    """(dimension, value of a, value of b) for every part of the comparison key that differs."""
    doc_a, doc_b = json.loads(a.key_document), json.loads(b.key_document)

    def part(doc: dict[str, Any], path: str) -> str:
        value: Any = doc
        for step in path.split("."):
            value = value.get(step, "") if isinstance(value, dict) else ""
        return str(value)

    return [
        (label, part(doc_a, path), part(doc_b, path))
        for path, label in _DIMENSIONS
        if part(doc_a, path) != part(doc_b, path)
    ]


@dataclass
class CaseComparison:
    label: str
    axes: dict[str, Any]
    a_ns: float | None
    b_ns: float | None

    @property
    def ratio(self) -> float | None:
        """How many times faster A is than B (B's latency / A's)."""
        if self.a_ns and self.b_ns:
            return self.b_ns / self.a_ns
        return None


def compare_cases(a: Run, b: Run) -> list[CaseComparison]:
    rows_a = case_rows(a, a.shown_workload)
    rows_b = {row.label: row for row in case_rows(b, b.shown_workload)}
    out = []
    for row in rows_a:
        other = rows_b.get(row.label)
        out.append(CaseComparison(row.label, row.axes, row.latency_ns, other.latency_ns if other else None))
    return out


def compare_get(public_id: str, other_id: str | None) -> tuple[Run, Run | None]:
    """The run and the one to compare it with: ``other_id``, else #1 of its group (or #2 when
    it is #1). 2 queries."""
    run = run_get(public_id)
    if other_id is None:
        return run, group_leader(run)
    if other_id == public_id:
        return run, run
    return run, run_get(other_id)
