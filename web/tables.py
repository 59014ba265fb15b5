"""Tables of runs that can be filtered, sorted and downloaded from the query string.

Every HTML table of runs goes through ``run_table``: the filters and the sort are query-string
parameters (a GET form, no JavaScript; every view is a permalink), and ``?format=csv`` or
``?format=jsonl`` answers the same filtered, sorted rows as a download (every row of the view,
not only the page shown) through ``runs.exports``, the writer the API's CSV export uses.

A filter value that names nothing (an unknown GPU, source, evidence level or status) is a 400
that says which values exist; an unknown sort falls back to the page's default order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from django.db.models import F, QuerySet, Sum
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.text import slugify

from runs import exports, selectors
from runs.models import ComparisonGroup, Environment, EvidenceLevel, RunStatus, Source
from runs.ordering import newest_first

JSONL = "application/x-ndjson"
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": JSONL}

# ?sort= name → column (a leading "-" reverses; nulls always last).
RUN_SORTS = {
    "rank": "rank",
    "observed": "observed_at",
    "latency": "latency_ns",
    "score": "sol_score",
    "speedup": "avg_speedup",
    "submitter": "submitter",
    "gpu": "group__hardware_product",
    "benchmark": "benchmark__native_id",
}


class BadQuery(Exception):
    """A query-string value that names nothing: the view answers 400 with this message."""


def bad_query(request: HttpRequest, error: BadQuery) -> HttpResponse:
    return render(request, "web/bad_query.html", {"message": str(error)}, status=400)


def gpu_slug(product: str) -> str:
    """'NVIDIA H100 80GB HBM3' → 'h100-80gb-hbm3' (the vendor is left out of the slug)."""
    for vendor in ("NVIDIA ", "AMD "):
        if product.startswith(vendor):
            product = product[len(vendor) :]
            break
    return slugify(product) or "unknown"


def gpu_products() -> dict[str, str]:
    """slug → normalised product of every GPU a comparison group names (1 query)."""
    return {gpu_slug(product): product for product in selectors.gpu_products()}


def _gpu_lookup(product: str) -> dict[str, Any]:
    """The runs of a GPU by their environments' ids (1 query), not through their groups
    (runs.selectors.one_of; /runs/?gpu=a800-sxm4-80gb through the join: 3.0 s at 1M runs)."""
    return selectors.one_of(
        "environment_id", list(Environment.objects.filter(product=product).values_list("pk", flat=True))
    )


@dataclass
class Filter:
    name: str
    label: str
    options: list[tuple[str, str]]  # (value, label); "" is "any"
    value: str = ""


@dataclass
class RunTable:
    # The page's queryset (or a function that builds it: a page that answers its default view from
    # a compiled query never needs it) and what the query string asks of it: filters in order, then
    # the order. ``rows`` is the result.
    base: QuerySet | Callable[[], QuerySet]
    lookups: list[dict[str, str]]
    order: list[Any]
    sort: str
    params: dict[str, str]  # the filters in force (not the sort or page)
    filters: list[Filter] = field(default_factory=list)
    fixed: dict[str, str] = field(default_factory=dict)  # the page's own parameters (show=all)
    default_sort: str = ""
    # How many published runs the view holds, where the sources' stored counts say it exactly
    # (every run, or one source's; the list's own count stops at runs.selectors.COUNT_CAP).
    source_total: int | None = None
    # With a GPU filter, the comparison groups whose stored counts sum to the view's size; the sum
    # is asked for only when a page shows the count (a download does not).
    total_groups: QuerySet | None = None

    @cached_property
    def rows(self) -> QuerySet:
        rows = self.base() if callable(self.base) else self.base
        for lookup in self.lookups:
            rows = rows.filter(**lookup)
        return rows.order_by(*self.order)

    @cached_property
    def known_total(self) -> int | None:
        """How many runs the view holds, where stored figures say it exactly; else None."""
        if self.total_groups is not None:
            return self.total_groups.aggregate(total=Sum("published_runs"))["total"] or 0
        return self.source_total

    def link(self, **changes: str) -> str:
        """This view's query string with ``changes``; the default sort is left out."""
        params = {**self.params, "sort": "" if self.sort == self.default_sort else self.sort, **changes}
        return "?" + urlencode({k: v for k, v in params.items() if v})

    @property
    def sort_links(self) -> dict[str, str]:
        """?sort= link for each column, keeping the filters: the current column reverses."""
        return {name: self.link(sort=f"-{name}" if self.sort == name else name) for name in RUN_SORTS}

    @property
    def shown(self) -> QuerySet:
        """The rows as the table's page shows them: only the columns a row reads
        (``runs.selectors.RUN_ROW_COLUMNS``); downloads take ``rows``, every column."""
        return self.rows.only(*selectors.RUN_ROW_COLUMNS)

    @property
    def page_query(self) -> str:
        return self.link()[1:]

    @property
    def csv_link(self) -> str:
        return self.link(format="csv")

    @property
    def jsonl_link(self) -> str:
        return self.link(format="jsonl")

    @property
    def filtered(self) -> bool:
        return any(value for name, value in self.params.items() if name not in self.fixed)

    @property
    def fixed_items(self) -> list[tuple[str, str]]:
        """Parameters of the page itself (``show=all``) that the filter form carries along."""
        return list(self.fixed.items())


def _choice(request: HttpRequest, name: str, options: Sequence[tuple[str, str]], label: str) -> str:
    value = request.GET.get(name, "").strip()
    if value and value not in {key for key, _ in options}:
        known = ", ".join(key for key, _ in options) or "none"
        raise BadQuery(f"Unknown {label} {value[:100]!r}. Known values: {known}.")
    return value


def order_for(sort: str, rank_order: Callable[[bool], list[Any]] | None = None) -> list[Any]:
    """The ``order_by`` of a valid ``?sort=`` value (``RUN_SORTS``, a leading "-" reverses)."""
    descending = sort.startswith("-")
    name = sort.lstrip("-")
    if name == "rank" and rank_order is not None:
        return rank_order(descending)
    if name == "observed" and descending:
        # The same order written as the index run_newest_first is (never-observed last).
        return newest_first()
    column = F(RUN_SORTS[name])
    return [column.desc(nulls_last=True) if descending else column.asc(nulls_last=True), "public_id"]


def run_table(
    request: HttpRequest,
    rows: QuerySet | Callable[[], QuerySet],
    *,
    filters: Sequence[str] = ("gpu", "source", "evidence", "status"),
    default_sort: str = "-observed",
    rank_order: Callable[[bool], list[Any]] | None = None,
    fixed: dict[str, str] | None = None,
    every_run: bool = False,
) -> RunTable:
    """Filter and sort ``rows`` (a ``for_listing`` QuerySet of runs, or a function that builds
    it when ``RunTable.rows`` is first read) from the query string.

    ``gpu`` and ``source`` cost one query each for their options; ``evidence`` and ``status``
    none. ``rank_order(descending)`` replaces the plain rank order (a ranking page orders by
    its metric so that reference rows sit in place). ``fixed`` are parameters the page's own
    URL carries (e.g. ``show=all``) kept in every link."""
    params: dict[str, str] = dict(fixed or {})
    lookups: list[dict[str, str]] = []
    made: list[Filter] = []
    source_total: int | None = None
    gpu_product = source_slug = ""
    for name in filters:
        if name == "gpu":
            products = gpu_products()
            options = [(slug, product) for slug, product in products.items()]
            value = _choice(request, "gpu", options, "GPU")
            if value:
                gpu_product = products[value]
                lookups.append(_gpu_lookup(gpu_product))
            made.append(Filter("gpu", "GPU", options, value))
        elif name == "source":
            sources = list(Source.objects.order_by("name").values_list("slug", "name", "published_runs", "pk"))
            options = [(slug, label) for slug, label, _, _ in sources]
            value = _choice(request, "source", options, "source")
            if value:
                source_slug = value
                # By id, not slug (runs.selectors.one_of; ?source=kernelbench through the join: 3.6 s).
                lookups.append(selectors.one_of("source_id", [pk for slug, _, _, pk in sources if slug == value]))
            made.append(Filter("source", "source", options, value))
            # The stored counts give the size of "every run" and of one source's runs exactly.
            published = {slug: count for slug, _, count, _ in sources}
            source_total = published[value] if value else sum(published.values())
        elif name == "evidence":
            options = list(EvidenceLevel.choices)
            value = _choice(request, "evidence", options, "evidence level")
            if value:
                lookups.append({"evidence_level": value})
            made.append(Filter("evidence", "evidence", options, value))
        elif name == "status":
            options = list(RunStatus.choices)
            value = _choice(request, "status", options, "status")
            if value:
                lookups.append({"status": value})
            made.append(Filter("status", "status", options, value))
        else:  # pragma: no cover - a page asked for a filter that does not exist
            raise ValueError(name)
        params[name] = value
    sort = request.GET.get("sort", default_sort)
    if sort.lstrip("-") not in RUN_SORTS:
        sort = default_sort
    # Exact when ``rows`` are every published run (``every_run``: the runs index) and no filter
    # but the source and the GPU narrows them: a GPU's runs are its comparison groups' (the key
    # names the GPU and the source), whose published runs are stored.
    others = not every_run or any(value for key, value in params.items() if key not in ("source", "gpu"))
    groups = None
    if not others and gpu_product:
        groups = ComparisonGroup.objects.filter(hardware_product=gpu_product)
        if source_slug:
            groups = groups.filter(source__slug=source_slug)
    return RunTable(
        base=rows,
        lookups=lookups,
        order=order_for(sort, rank_order),
        sort=sort,
        params=params,
        filters=made,
        fixed=dict(fixed or {}),
        default_sort=default_sort,
        source_total=None if others or gpu_product else source_total,
        total_groups=groups,
    )


def wants_download(request: HttpRequest) -> str | None:
    """'csv' or 'jsonl' when the query string asks for a download of the view."""
    chosen = request.GET.get("format", "")
    return chosen if chosen in FORMATS else None


def _streamed(lines: Iterator[str], chosen: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse((line.encode("utf-8") for line in lines), content_type=FORMATS[chosen])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{chosen}"'
    response["Cache-Control"] = "no-store"
    return response


def download_runs(rows: QuerySet, chosen: str, filename: str) -> StreamingHttpResponse:
    """The rows of the view as CSV (the API's columns) or JSONL (the same columns, typed)."""
    lines = exports.csv_lines(rows) if chosen == "csv" else exports.row_jsonl_lines(rows)
    return _streamed(lines, chosen, filename)


def download_table(
    columns: Sequence[str], records: Sequence[dict[str, Any]], chosen: str, filename: str
) -> StreamingHttpResponse:
    """A non-run table (benchmarks, GPUs, sources, projects) as CSV or JSONL."""
    if chosen == "csv":
        lines = exports.table_csv_lines(columns, ([record[c] for c in columns] for record in records))
    else:
        lines = exports.jsonl(records)
    return _streamed(lines, chosen, filename)
