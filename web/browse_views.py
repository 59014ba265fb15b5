"""The index pages (benchmarks, GPUs, sources, projects, runs) and a benchmark's cross-GPU
view. Filters and sorts are in the query string (GET forms, no JavaScript; every view is a
permalink); ``?format=csv`` / ``?format=jsonl`` downloads exactly the rows of the view.

Each view's docstring gives its query count; tests/web/test_browse_queries.py pins them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from runs import selectors
from runs.models import Run
from web import browse, figures, jinja
from web.tables import (
    BadQuery,
    bad_query,
    download_runs,
    download_table,
    run_table,
    wants_download,
)

INDEX_PAGE_SIZE = 50


def _iso(moment: Any) -> str:
    return moment.isoformat().replace("+00:00", "Z") if moment else ""


def _links(params: dict[str, str], sort: str, sorts: Any) -> dict[str, Any]:
    """Sort links that keep the filters, the page query and the download links of a view."""

    def link(**changes: str) -> str:
        merged = {**params, "sort": sort, **changes}
        return "?" + urlencode({k: v for k, v in merged.items() if v})

    return {
        "sort_links": {name: link(sort=f"-{name}" if sort == name else name) for name in sorts},
        "page_query": link()[1:],
        "csv_link": link(format="csv"),
        "jsonl_link": link(format="jsonl"),
    }


def benchmarks_index(request: HttpRequest) -> HttpResponse:
    """6 queries: sources, collections and tags, GPUs (the filters' options), the count, the
    page with its annotated counts, the leaders of the page's benchmarks."""
    try:
        listing = browse.benchmark_list(request.GET)
    except BadQuery as error:
        return bad_query(request, error)
    chosen = wants_download(request)
    if chosen:
        benchmarks = list(listing.rows)
        browse.best_runs(benchmarks)
        records = [_benchmark_record(b) for b in benchmarks]
        return download_table(BENCHMARK_COLUMNS, records, chosen, "benchmarks")
    page = selectors.CappedPaginator(listing.rows, INDEX_PAGE_SIZE).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    browse.best_runs(page.object_list)
    # Jinja (web.jinja): in Django's templates, writing the page's 50 rows was two thirds of it.
    return jinja.render_page(
        request,
        "web/benchmark_list.html",
        {"page": page, "filters": listing.filters, "sort": listing.sort}
        | _links(listing.params, listing.sort, browse.BENCHMARK_SORTS),
    )


BENCHMARK_COLUMNS = [
    "source",
    "nativeId",
    "title",
    "collection",
    "tags",
    "runs",
    "submitters",
    "lastObservedAt",
    "bestRun",
    "bestGpu",
    "bestMetric",
    "bestValue",
    "bestObservedAt",
]


def _benchmark_record(benchmark: Any) -> dict[str, Any]:
    best = benchmark.best
    metric = best.group.ranking_metric if best else ""
    return {
        "source": benchmark.source.slug,
        "nativeId": benchmark.native_id,
        "title": benchmark.title,
        "collection": benchmark.collection,
        "tags": " ".join(str(tag) for tag in benchmark.tags or []),
        "runs": benchmark.run_count,
        "submitters": benchmark.submitter_count,
        "lastObservedAt": _iso(benchmark.last_observed),
        "bestRun": best.public_id if best else "",
        "bestGpu": best.group.hardware_product if best else "",
        "bestMetric": metric,
        "bestValue": getattr(best, metric) if best else None,
        "bestObservedAt": _iso(best.observed_at) if best else "",
    }


def gpus_index(request: HttpRequest) -> HttpResponse:
    """1 query: every GPU with its counts."""
    gpus, sort = browse.gpu_list(request.GET.get("sort", "name"))
    chosen = wants_download(request)
    if chosen:
        columns = ["slug", "product", "architecture", "runs", "benchmarks", "groups", "sources", "lastObservedAt"]
        records = [
            dict(
                zip(
                    columns,
                    (
                        g.slug,
                        g.product,
                        g.architecture,
                        g.run_count,
                        g.benchmark_count,
                        g.group_count,
                        g.source_count,
                        _iso(g.last_observed),
                    ),
                    strict=True,
                )
            )
            for g in gpus
        ]
        return download_table(columns, records, chosen, "gpus")
    return render(request, "web/gpu_list.html", {"gpus": gpus, "sort": sort} | _links({}, sort, browse.GPU_SORTS))


def gpu_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """4 queries: the GPUs with their counts (the number of #1 runs among them), the sources
    (filter options), and a page of the #1 run of every comparison group on this GPU: in
    benchmark order (the default) the page's runs from the groups, then their rows; in another
    order one query for the rows and one for the count (of the groups' stored figures, or of
    the runs when an evidence level narrows them)."""
    gpus, _ = browse.gpu_list()
    gpu = next((g for g in gpus if g.slug == slug), None)
    if gpu is None:
        raise Http404(f"No GPU {slug}")
    try:
        table = run_table(
            request, browse.gpu_best_runs(gpu.product), filters=("source", "evidence"), default_sort="benchmark"
        )
    except BadQuery as error:
        return bad_query(request, error)
    chosen = wants_download(request)
    if chosen:
        return download_runs(table.rows, chosen, f"gpu-{gpu.slug}-best-runs")
    evidence, source = table.params["evidence"], table.params["source"]
    if table.sort.lstrip("-") == "benchmark" and not evidence:
        known = browse.gpu_leader_count(gpu.product, source) if source else gpu.leader_count
        rows = browse.GroupLeaders(gpu.product, source, table.sort.startswith("-"), table.shown)
        page = selectors.paginate(rows, request.GET.get("page"), known_count=known)
    else:
        # The groups' stored figures count the #1s, unless an evidence level narrows them.
        known = None if evidence else browse.gpu_leader_count(gpu.product, source)
        page = selectors.paginate(table.shown, request.GET.get("page"), known_count=known)
    return render(request, "web/gpu_detail.html", {"gpu": gpu, "table": table, "page": page})


def sources_index(request: HttpRequest) -> HttpResponse:
    """1 query: every source with its counts."""
    sources = browse.source_list()
    chosen = wants_download(request)
    if chosen:
        columns = ["slug", "name", "url", "runs", "benchmarks", "submitters", "gpus", "lastObservedAt"]
        records = [
            dict(
                zip(
                    columns,
                    (
                        s.slug,
                        s.name,
                        s.url,
                        s.run_count,
                        s.benchmark_count,
                        s.submitter_count,
                        s.gpu_count,
                        _iso(s.last_observed),
                    ),
                    strict=True,
                )
            )
            for s in sources
        ]
        return download_table(columns, records, chosen, "sources")
    return render(request, "web/source_list.html", {"sources": sources} | _links({}, "", {}))


def projects_index(request: HttpRequest) -> HttpResponse:
    """2 queries: the count and the page of projects with their counts."""
    query = request.GET.get("q", "").replace("\x00", "").strip()[:200]
    rows, sort = browse.project_list(query, request.GET.get("sort", "name"))
    chosen = wants_download(request)
    if chosen:
        columns = ["slug", "name", "runs", "benchmarks", "revisions", "lastObservedAt"]
        records = [
            dict(
                zip(
                    columns,
                    (p.slug, p.name, p.run_count, p.benchmark_count, p.revision_count, _iso(p.last_observed)),
                    strict=True,
                )
            )
            for p in rows
        ]
        return download_table(columns, records, chosen, "projects")
    page = selectors.CappedPaginator(rows, INDEX_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "web/project_list.html",
        {"page": page, "project_q": query, "sort": sort} | _links({"q": query}, sort, browse.PROJECT_SORTS),
    )


def runs_index(request: HttpRequest) -> HttpResponse:
    """4 queries: GPUs and sources (filter options), the count and the page of runs; 3 when the
    sources' stored counts give the count (no filter, or only a source); one more with a GPU (its
    environments). With a GPU (and maybe a source) and no other filter, the count is the sum of
    its comparison groups' stored counts, not a COUNT over the runs."""
    try:
        table = run_table(request, Run.objects.visible().for_listing(), every_run=True)
    except BadQuery as error:
        return bad_query(request, error)
    chosen = wants_download(request)
    if chosen:
        return download_runs(table.rows, chosen, "runs")
    page = selectors.paginate(table.shown, request.GET.get("page"), known_count=table.known_total)
    return render(request, "web/run_list.html", {"table": table, "page": page})


def benchmark_gpus(request: HttpRequest, source: str, native_id: str) -> HttpResponse:
    """3 queries: the benchmark, its comparison groups, the ranked and reference runs in them."""
    benchmark = selectors.benchmark_get(source, native_id)
    matrix = browse.cross_gpu_matrix(benchmark)
    chosen = wants_download(request)
    if chosen:
        ids = [cell.run.pk for row in matrix.rows for cell in row.cells if cell is not None]
        rows = Run.objects.filter(pk__in=ids).for_listing().order_by("group__hardware_product", "rank", "public_id")
        return download_runs(rows, chosen, "cross-gpu")
    # Jinja (web.jinja): the matrix's cells, some 3,000 variable lookups in nested loops, took
    # half of this page's time in Django's templates (35 ms of CPU at a million runs).
    return jinja.render_page(
        request,
        "web/benchmark_gpus.html",
        {
            "benchmark": benchmark,
            "matrix": matrix,
            "figures": figures.matrix_figures(matrix),
            "matrix_top": browse.MATRIX_TOP,
            "csv_link": "?format=csv",
            "jsonl_link": "?format=jsonl",
        },
    )
