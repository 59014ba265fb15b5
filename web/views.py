"""The public website: function-based views that read through ``runs.selectors`` (the run index)
and ``web.pages`` (page sections with community data) and render.

Each view's docstring gives its query count; tests/web/test_queries.py pins them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from kernelindex import canonical
from kernelindex.markup import element_text
from kernelindex.prepared import Prepared, PreparedRows
from runs import selectors
from runs.manifests import bundle_export, display_bundle
from runs.models import ComparisonGroup, Run
from web import figures, jinja, pages, tables


def _tombstone(request: HttpRequest, run: Run) -> HttpResponse:
    return render(request, "runs/run_tombstone.html", {"run": run}, status=410)


def home(request: HttpRequest) -> HttpResponse:
    """3 queries: sources, most-run benchmarks, latest runs."""
    return render(request, "runs/home.html", selectors.home_lists())


def run_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    """2 queries, up to 5 (web.pages.run_page); a tombstone costs 1."""
    try:
        page = pages.run_page(public_id)
    except selectors.RunGone as gone:
        return _tombstone(request, gone.run)
    run = page.run
    return jinja.render_page(
        request,
        "runs/run_detail.html",
        {
            "page": page,
            "run": run,
            "figures": figures.run_figures(page.cases),
            "manifest": element_text(canonical.pretty(display_bundle(run))),
            "permalink": settings.SITE_URL + run.get_absolute_url(),
        },
    )


def _etag_matches(request: HttpRequest, etag: str) -> bool:
    header = request.headers.get("If-None-Match", "")
    if header.strip() == "*":
        return True
    for candidate in header.split(","):
        candidate = candidate.strip()
        candidate = candidate.removeprefix("W/").strip('"')
        if candidate == etag:
            return True
    return False


def run_json(request: HttpRequest, public_id: str) -> HttpResponse:
    """The full canonical bundle, ETag = run digest; If-None-Match → 304. 1 query."""
    try:
        run = selectors.run_get(public_id)
    except selectors.RunGone as gone:
        run = gone.run
        return JsonResponse(
            {
                "detail": f"Run {run.public_id} is {run.visibility}.",
                "publicId": run.public_id,
                "title": run.title,
                "digest": run.digest,
                "visibility": run.visibility,
                "reason": run.public_reason,
            },
            status=410,
        )
    etag = f'"{run.digest}"'
    if _etag_matches(request, run.digest):
        response = HttpResponseNotModified()
        response["ETag"] = etag
        return response
    # Without the moderation state (a quarantine): the ETag is the digest, so the body must not
    # change while the digest stays the same. The page shows the quarantine.
    body = canonical.pretty(bundle_export(run, full=True, moderation=False)) + "\n"
    response = HttpResponse(body, content_type="application/json")
    response["ETag"] = etag
    response["Content-Disposition"] = f'inline; filename="run-{run.public_id}.manifest.json"'
    response["Access-Control-Allow-Origin"] = "*"
    return response


# What a ranking row shows ({% ranking_rows %}, its submitter through identity_labels, the chart):
# a page loads only these columns of its 50 runs and their implementations and projects. The rest
# (documents aside, some 40 columns of dates, digests and ids) cost a third of the page to load.
RANKING_ROW_COLUMNS = (
    *("public_id", "rank", "is_reference", "quarantined", "status", "sol_score", "latency_ns", "avg_speedup"),
    *("fast_1_count", "fast_1_total", "submitter", "title", "external_id", "observed_at", "evidence_level"),
    *("implementation__submitter", "implementation__revision", "implementation__project__slug"),
    "implementation__project__name",
)


def _rank_order(group: ComparisonGroup) -> Callable[[bool], list[Any]]:
    """A ranking's "rank" order: by the ranking rule's metric, so reference rows sit in place
    among the ranks (``descending`` reverses it)."""
    return lambda descending: selectors.metric_order(group, (group.ranking_direction == "desc") != descending)


def _shown(rows: QuerySet[Run]) -> QuerySet[Run]:
    """Ranking rows with only what a row shows: the group's own source, benchmark and
    ranked_count ("rank N of M") come from the group (attach_group), not joined per row."""
    return rows.select_related(None).select_related("implementation__project").only(*RANKING_ROW_COLUMNS)


# The rows of a ranking page as the query string leaves them (no filter), one compiled query per
# view and ranking rule (kernelindex.prepared): building and compiling this queryset took longer
# than running it. A filtered view builds its queryset the ordinary way.
_RANKING_VIEWS: dict[tuple[bool, str, str, str], Prepared[Run]] = {}


def _ranking_view(group: ComparisonGroup, show_all: bool, sort: str) -> PreparedRows[Run]:
    metric, direction = group.ranking_metric, group.ranking_direction
    shape = (show_all, sort, metric, direction)
    prepared = _RANKING_VIEWS.get(shape)
    if prepared is None:

        def build(group_id: int) -> QuerySet[Run]:
            like = ComparisonGroup(pk=group_id, ranking_metric=metric, ranking_direction=direction)
            rows = selectors.ranking_rows(like, show_all=show_all)
            return _shown(rows.order_by(*tables.order_for(sort, _rank_order(like))))

        prepared = _RANKING_VIEWS[shape] = Prepared(build, group_id=int)
    return prepared.rows(group_id=group.pk)


def group_detail(request: HttpRequest, key: str) -> HttpResponse:
    """2 queries: the group (and whether it has published flags), one page of rows; 1 more for
    the flags where it has some, 1 more with an evidence filter (the row count).
    ?format=csv|jsonl: the group and the rows of the view (2)."""
    group = pages.ranking_group(key)
    show_all = request.GET.get("show") == "all"
    try:
        table = tables.run_table(
            request,
            lambda: selectors.ranking_rows(group, show_all=show_all),
            filters=("evidence",),
            default_sort="rank",
            rank_order=_rank_order(group),
            fixed={"show": "all"} if show_all else {},
        )
    except tables.BadQuery as error:
        return tables.bad_query(request, error)
    chosen = tables.wants_download(request)
    if chosen:
        # The ranking rows leave out what the group gives every row; a download writes them.
        rows = table.rows.select_related("source", "benchmark__source", "group")
        return tables.download_runs(rows, chosen, f"group-{group.key.removeprefix('sha256:')[:16]}")
    if table.filtered:
        page = selectors.paginate(_shown(table.rows), request.GET.get("page"))
    else:  # the row count is a stored figure (runs.counts): no COUNT query, and a compiled query
        count = group.published_runs if show_all else group.ranked_count + group.reference_runs
        rows = _ranking_view(group, show_all, table.sort)
        page = selectors.paginate(rows, request.GET.get("page"), known_count=count)
    rows = pages.attach_public_flags(selectors.attach_group(list(page.object_list), group), group)
    rule = selectors.group_rule(group)
    metric_label = "SOL score" if group.ranking_metric == "sol_score" else "latency"
    return jinja.render_page(
        request,
        "runs/group_detail.html",
        {
            "group": group,
            "page": page,
            "rows": rows,
            "rule": rule,
            "eligibility": selectors.eligibility_conditions(),
            "table": table,
            "sort": table.sort,
            "show_all": show_all,
            "sort_links": table.sort_links,
            "toggle_link": table.link(show="" if show_all else "all"),
            "page_query": table.page_query,
            "chart": figures.group_chart(group, rows),
            "cols": figures.run_columns(rows),
            "metric_label": metric_label,
        },
    )


def compare(request: HttpRequest, public_id: str, other_id: str | None = None) -> HttpResponse:
    """2 queries: the run and the run it is compared with."""
    try:
        run, other = pages.compare_get(public_id, other_id)
    except selectors.RunGone as gone:
        return _tombstone(request, gone.run)
    context: dict[str, Any] = {"run": run, "other": other, "differences": [], "cases": [], "chart": ""}
    if other is not None:
        if other.group_id != run.group_id:
            context["differences"] = pages.differing_dimensions(run.group, other.group)
        cases = pages.compare_cases(run, other)
        if not any(c.a_ns or c.b_ns for c in cases):
            cases = []  # the workload's cases are known but neither run has per-case results
        context["cases"] = cases
        context.update(figures.compare_figures(run, other, cases))
        context["latency_ratio"] = other.latency_ns / run.latency_ns if run.latency_ns and other.latency_ns else None
        context["score_ratio"] = other.sol_score / run.sol_score if run.sol_score and other.sol_score else None
    return render(request, "runs/run_compare.html", context)


def benchmark_detail(request: HttpRequest, source: str, native_id: str) -> HttpResponse:
    """4 queries: the benchmark, its groups with counts, the top runs of every group, the metric
    values of all their runs (the charts)."""
    benchmark = selectors.benchmark_get(source, native_id)
    groups = selectors.benchmark_groups(benchmark)
    group_figures = figures.benchmark_figures(benchmark, [block["group"] for block in groups])
    figures.attach(groups, group_figures)
    return jinja.render_page(
        request,
        "runs/benchmark_detail.html",
        {
            "benchmark": benchmark,
            "groups": groups,
            "summary": figures.benchmark_summary(groups, group_figures),
            "top_n": selectors.TOP_PER_GROUP,
            "case_table": figures.run_figures(pages.case_rows(None, benchmark.workload)),
        },
    )


def source_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """4 queries: the source, the benchmark count and page, the latest runs."""
    source = selectors.source_get(slug)
    page = selectors.paginate(selectors.source_benchmarks(source), request.GET.get("page"))
    return render(
        request,
        "runs/source_detail.html",
        {"source": source, "page": page, "latest_runs": selectors.latest_runs(source=source)},
    )


def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """7 queries: the project, its revisions, its runs' latest record changes, the GPUs and
    sources (filter options), the run count and page. ?format=csv|jsonl: the project, the
    filter options and the rows of the view."""
    project = selectors.project_get(slug)
    try:
        table = tables.run_table(request, selectors.project_runs(project))
    except tables.BadQuery as error:
        return tables.bad_query(request, error)
    chosen = tables.wants_download(request)
    if chosen:
        return tables.download_runs(table.rows, chosen, f"project-{project.slug}")
    return render(
        request,
        "runs/project_detail.html",
        {
            "project": project,
            "revisions": selectors.project_revisions(project),
            "history": pages.project_history(project),
            "table": table,
            "page": selectors.paginate(table.shown, request.GET.get("page")),
        },
    )


def environment_detail(request: HttpRequest, digest: str) -> HttpResponse:
    """4 queries: the environment, the sources (filter options), the run count and page (3
    unfiltered: the environment's stored figure is the count).
    ?format=csv|jsonl: the environment, the sources and the rows of the view."""
    environment = selectors.environment_get(digest)
    try:
        table = tables.run_table(
            request, selectors.environment_runs(environment), filters=("source", "evidence", "status")
        )
    except tables.BadQuery as error:
        return tables.bad_query(request, error)
    chosen = tables.wants_download(request)
    if chosen:
        return tables.download_runs(table.rows, chosen, f"environment-{digest.removeprefix('sha256:')[:16]}")
    return render(
        request,
        "runs/environment_detail.html",
        {
            "environment": environment,
            "software": json.dumps(environment.spec.get("software", {}), indent=2, ensure_ascii=False),
            "table": table,
            # Unfiltered, the environment's stored figure is the count (a million-run
            # environment's bounded COUNT read 10,001 rows: 40 ms).
            "page": selectors.paginate(
                table.shown,
                request.GET.get("page"),
                known_count=None if table.filtered else environment.published_runs,
            ),
        },
    )


def search(request: HttpRequest) -> HttpResponse:
    """4 queries for a query (benchmarks, submitters, projects, GPUs), 0 for none; with
    ?submitter= the runs of one submitter (4 queries: GPUs and sources for the filters, the
    count and the page; ?format=csv|jsonl downloads them)."""
    # NUL cannot be in a PostgreSQL string literal; it matches nothing anyway.
    query = request.GET.get("q", "").replace("\x00", "").strip()[:200]
    submitter = request.GET.get("submitter", "").replace("\x00", "").strip()[:300]
    context: dict[str, Any] = {"q": query, "submitter": submitter}
    if submitter:
        try:
            table = tables.run_table(request, selectors.submitter_runs(submitter), fixed={"submitter": submitter})
        except tables.BadQuery as error:
            return tables.bad_query(request, error)
        chosen = tables.wants_download(request)
        if chosen:
            return tables.download_runs(table.rows, chosen, "submitter-runs")
        context["table"] = table
        context["submitter_page"] = selectors.paginate(table.shown, request.GET.get("page"))
    context["results"] = selectors.search(query)
    context["has_results"] = any(context["results"].values())
    return render(request, "runs/search.html", context)


def _citation(run: Run, permalink: str, accessed: str) -> dict[str, Any]:
    labels = selectors.identity_labels(run)
    year = (run.published_at or timezone.now()).astimezone(UTC)
    author = labels["implementation"] or run.source.name
    title = f"{run.title or run.public_id} (KernelIndex run {run.public_id})"
    text = (
        f"{author}. {title}. {run.source.name} via KernelIndex, published {year:%Y-%m-%d}. "
        f"{permalink} (digest {run.digest}; accessed {accessed})."
    )
    key = f"kernelindex-{run.public_id}"

    def bib(value: str) -> str:
        return value.replace("\\", "\\textbackslash{}").replace("{", "\\{").replace("}", "\\}")

    bibtex = (
        f"@misc{{{key},\n"
        f"  author = {{{{{bib(author)}}}}},\n"
        f"  title = {{{{{bib(title)}}}}},\n"
        f"  howpublished = {{{bib(run.source.name)} via KernelIndex}},\n"
        f"  year = {{{year:%Y}}},\n"
        f"  url = {{{permalink}}},\n"
        f"  note = {{Digest {run.digest}. Accessed {accessed}.}}\n"
        f"}}\n"
    )
    csl = {
        "id": key,
        "type": "dataset",
        "title": title,
        "author": [{"literal": author}],
        "publisher": "KernelIndex",
        "source": run.source.name,
        "issued": {"date-parts": [[year.year, year.month, year.day]]},
        "accessed": {"date-parts": [[int(part) for part in accessed.split("-")]]},
        "URL": permalink,
        "note": f"digest: {run.digest}",
        "version": run.digest,
    }
    return {"text": text, "bibtex": bibtex, "csl": json.dumps([csl], indent=2, ensure_ascii=False)}


def cite(request: HttpRequest, public_id: str) -> HttpResponse:
    """1 query. ?format=txt|bib|csl answers the citation alone, as a download."""
    try:
        run = selectors.run_get(public_id)
    except selectors.RunGone as gone:
        return _tombstone(request, gone.run)
    permalink = settings.SITE_URL + run.get_absolute_url()
    accessed = timezone.now().astimezone(UTC).strftime("%Y-%m-%d")
    citation = _citation(run, permalink, accessed)
    formats = {
        "txt": ("text", "text/plain; charset=utf-8", "txt"),
        "bib": ("bibtex", "application/x-bibtex; charset=utf-8", "bib"),
        "csl": ("csl", "application/vnd.citationstyles.csl+json", "json"),
    }
    chosen = request.GET.get("format")
    if chosen in formats:
        field, content_type, extension = formats[chosen]
        response = HttpResponse(citation[field], content_type=content_type)
        response["Content-Disposition"] = f'inline; filename="kernelindex-{run.public_id}.{extension}"'
        return response
    return render(
        request,
        "runs/run_cite.html",
        {"run": run, "permalink": permalink, "accessed": accessed, "citation": citation},
    )
