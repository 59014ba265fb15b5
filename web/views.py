"""The public website: function-based views that read through ``runs.selectors`` (the run index)
and ``web.pages`` (page sections with community data) and render.

Each view's docstring gives its query count; tests/web/test_queries.py pins them.
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from kernelindex import canonical
from runs import selectors
from runs.manifests import bundle_export, display_bundle
from runs.models import Run
from web import charts, pages
from web.templatetags.kiformat import latency, score


def _tombstone(request: HttpRequest, run: Run) -> HttpResponse:
    return render(request, "runs/run_tombstone.html", {"run": run}, status=410)


def home(request: HttpRequest) -> HttpResponse:
    """3 queries: sources, most-run benchmarks, latest runs."""
    return render(request, "runs/home.html", selectors.home_lists())


def run_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    """5 queries (web.pages.run_page); a tombstone costs 1."""
    try:
        page = pages.run_page(public_id)
    except selectors.RunGone as gone:
        return _tombstone(request, gone.run)
    run = page.run
    return render(
        request,
        "runs/run_detail.html",
        {
            "page": page,
            "run": run,
            "manifest": canonical.pretty(display_bundle(run)),
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


def _sort_links(current: str, show_all: bool) -> dict[str, str]:
    """?sort= link for each column: clicking the current column reverses it."""
    links = {}
    for name in selectors.SORTS:
        value = f"-{name}" if current == name else name
        params = {"sort": value}
        if show_all:
            params["show"] = "all"
        links[name] = "?" + urlencode(params)
    return links


def _toggle_link(request: HttpRequest, sort: str, show_all: bool) -> str:
    params = {"sort": sort} if sort != "rank" else {}
    if not show_all:
        params["show"] = "all"
    return "?" + urlencode(params) if params else request.path


def group_detail(request: HttpRequest, key: str) -> HttpResponse:
    """4 queries: the group, the row count, one page of rows, their published flags."""
    group = selectors.group_get(key)
    sort = request.GET.get("sort", "rank")
    if sort.lstrip("-") not in selectors.SORTS:
        sort = "rank"
    show_all = request.GET.get("show") == "all"
    rows = pages.with_public_flags(selectors.ranking_rows(group, sort=sort, show_all=show_all))
    page = selectors.paginate(rows, request.GET.get("page"))
    rows = selectors.attach_group(list(page.object_list), group)
    rule = selectors.group_rule(group)
    fmt = score if group.ranking_metric == "sol_score" else latency
    metric_label = "SOL score" if group.ranking_metric == "sol_score" else "latency"
    # The chart is by rank whatever the table's sort: rows in the ranking rule's order.
    charted = sorted(
        (run for run in rows if getattr(run, group.ranking_metric) is not None),
        key=lambda run: getattr(run, group.ranking_metric),
        reverse=group.ranking_direction == "desc",
    )
    points = []
    for run in charted:
        value = getattr(run, group.ranking_metric)
        place = f"#{run.rank}" if run.rank else "reference" if run.is_reference else "unranked"
        points.append(
            charts.Point(
                x_label=str(run.rank) if run.rank else "·",
                value=value,
                label=f"{place} {run.submitter}: {fmt(value)}",
                muted=run.rank is None,
            )
        )
    params = {"show": "all"} if show_all else {}
    if sort != "rank":
        params["sort"] = sort
    return render(
        request,
        "runs/group_detail.html",
        {
            "group": group,
            "page": page,
            "rows": rows,
            "rule": rule,
            "eligibility": selectors.eligibility_conditions(),
            "sort": sort,
            "show_all": show_all,
            "sort_links": _sort_links(sort, show_all),
            "toggle_link": _toggle_link(request, sort, show_all),
            "page_query": urlencode(params),
            "chart": charts.metric_by_rank(points, title=f"{metric_label} by rank", y_label=metric_label, fmt=fmt),
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
        context["chart"] = charts.paired_latency(
            [(c.label, c.a_ns, c.b_ns) for c in cases],
            title=f"Per-case latency: {run.public_id} and {other.public_id}",
            names=(f"{run.public_id}", f"{other.public_id}"),
            fmt=lambda v: latency(v),
        )
        context["latency_ratio"] = other.latency_ns / run.latency_ns if run.latency_ns and other.latency_ns else None
        context["score_ratio"] = other.sol_score / run.sol_score if run.sol_score and other.sol_score else None
    return render(request, "runs/run_compare.html", context)


def benchmark_detail(request: HttpRequest, source: str, native_id: str) -> HttpResponse:
    """3 queries: the benchmark, its groups with counts, the top runs of every group."""
    benchmark = selectors.benchmark_get(source, native_id)
    return render(
        request,
        "runs/benchmark_detail.html",
        {
            "benchmark": benchmark,
            "groups": selectors.benchmark_groups(benchmark),
            "top_n": selectors.TOP_PER_GROUP,
            "cases": pages.case_rows(None, benchmark.workload),
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
    """5 queries: the project, its revisions, its runs' latest record changes, the run count and page."""
    project = selectors.project_get(slug)
    return render(
        request,
        "runs/project_detail.html",
        {
            "project": project,
            "revisions": selectors.project_revisions(project),
            "history": pages.project_history(project),
            "page": selectors.paginate(selectors.project_runs(project), request.GET.get("page")),
        },
    )


def environment_detail(request: HttpRequest, digest: str) -> HttpResponse:
    """3 queries: the environment, the run count and page."""
    environment = selectors.environment_get(digest)
    return render(
        request,
        "runs/environment_detail.html",
        {
            "environment": environment,
            "software": json.dumps(environment.spec.get("software", {}), indent=2, ensure_ascii=False),
            "page": selectors.paginate(selectors.environment_runs(environment), request.GET.get("page")),
        },
    )


def search(request: HttpRequest) -> HttpResponse:
    """4 queries for a query (benchmarks, submitters, projects, GPUs), 0 for none; with
    ?submitter= the runs of one submitter (2 queries)."""
    # NUL cannot be in a PostgreSQL string literal; it matches nothing anyway.
    query = request.GET.get("q", "").replace("\x00", "").strip()[:200]
    submitter = request.GET.get("submitter", "").replace("\x00", "").strip()[:300]
    context: dict[str, Any] = {"q": query, "submitter": submitter, "results": selectors.search(query)}
    if submitter:
        context["submitter_page"] = selectors.paginate(selectors.submitter_runs(submitter), request.GET.get("page"))
        context["submitter_query"] = urlencode({"submitter": submitter})
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
