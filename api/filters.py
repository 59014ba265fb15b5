"""django-filter FilterSets of the API. Query parameters are camelCase like the JSON.

Values that would reach the database in a form it cannot hold (a date beyond its range, a
number beyond a column) are refused here with a 400 naming the parameter.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.http import QueryDict
from django_filters.constants import EMPTY_VALUES
from django_filters.rest_framework import DjangoFilterBackend

from api.pagination import MERGEABLE
from attestations.models import Attestation, AttestationKind
from kernelindex.gpus import normalise_product
from runs.models import (
    Benchmark,
    ComparisonGroup,
    Environment,
    EvidenceLevel,
    Implementation,
    Protocol,
    Run,
    RunStatus,
    Source,
    Workload,
)
from runs.ordering import KEYSET_FIRST_TIME, Sentinel
from runs.selectors import one_of

_LEAP_SECOND = re.compile(r"(T\d\d:\d\d:)60(?:[.,]\d+)?")


class SafeDateTimeField(forms.DateTimeField):
    """A date or ISO 8601 date-time (naive = UTC), converted to UTC.

    A valid date-time whose UTC value falls outside the years 1–9999 (0001-01-01T00:00+01:00)
    is clamped to the nearest representable instant: as a bound on observedAt that filters
    exactly the same runs, and no database is asked to hold the unrepresentable value."""

    def to_python(self, value: Any) -> datetime | None:
        if isinstance(value, str):
            # RFC 3339 allows a lower-case "t" and "z", and a leap second (":60").
            value = value.strip().upper()
            value = _LEAP_SECOND.sub(r"\g<1>59.999999", value)
        result = super().to_python(value)
        if result is None:
            return None
        if result.tzinfo is None:
            return result.replace(tzinfo=UTC)
        try:
            return result.astimezone(UTC)
        except OverflowError:
            offset = result.utcoffset()
            early = offset is not None and offset.total_seconds() > 0
            return datetime.min.replace(tzinfo=UTC) if early else datetime.max.replace(tzinfo=UTC)


class SafeDateTimeFilter(django_filters.DateTimeFilter):
    field_class = SafeDateTimeField


class ObservedBoundFilter(SafeDateTimeFilter):
    """A bound on ``observed_at`` that is also written on the expression the newest-first indexes
    are built on (``runs.ordering``), so the list starts reading at the bound: as a bound on the
    column alone, ``observedBefore=2025-01-01`` walked the index past every newer run first
    (3.0 s at 1,000,000 runs). Runs never observed still never match."""

    def filter(self, queryset: QuerySet, value: Any) -> QuerySet:
        if value in EMPTY_VALUES:
            return queryset
        lookup = self.lookup_expr
        return queryset.alias(k_observed_bound=Coalesce("observed_at", Sentinel(KEYSET_FIRST_TIME))).filter(
            **{f"observed_at__{lookup}": value, f"k_observed_bound__{lookup}": value}
        )


def _for_this_request(declared: django_filters.Filter) -> django_filters.Filter:
    """A shallow copy of a prepared filter: it shares the form field, gets its own parent."""
    copied = copy.copy(declared)
    if declared.method is not None:
        copied.method = declared.method  # a FilterMethod that asks this copy's parent, not the shared one's
    return copied


class ApiFilterSet(django_filters.FilterSet):
    """What every API FilterSet shares.

    - A choice or date parameter given with an empty value is an error (the schema says it is an
      enum or a date-time), not "no filter".
    - A text value containing NUL matches nothing: no stored name contains NUL, and PostgreSQL
      text could not hold one, so the query is answered empty without asking the database.
    """

    STRICT = (django_filters.ChoiceFilter, django_filters.DateTimeFilter)

    def __init__(
        self, data: Any = None, queryset: QuerySet | None = None, *, request: Any = None, prefix: str | None = None
    ) -> None:
        # django-filter's own __init__, less its deep copy of every declared filter per request
        # (and, through the copies, a new form field and form class for each): a seventh of an
        # API list. Each request gets shallow copies of filters prepared once per class.
        if queryset is None:
            queryset = self._meta.model._default_manager.all()
        self.is_bound = data is not None
        self.data = data or QueryDict()
        self.queryset = queryset
        self.request = request
        self.form_prefix = prefix
        self.filters = {name: _for_this_request(declared) for name, declared in self._prepared_filters().items()}
        for declared in self.filters.values():
            declared.model = queryset.model
            declared.parent = self

    @classmethod
    def _prepared_filters(cls) -> dict[str, django_filters.Filter]:
        """The declared filters with their form fields built once, for this class only."""
        prepared = cls.__dict__.get("_prepared")
        if prepared is None:
            prepared = copy.deepcopy(cls.base_filters)
            for declared in prepared.values():
                # Django's form fields refuse NUL (400); here it is valid text that matches nothing.
                declared.field.validators = [
                    validator
                    for validator in declared.field.validators
                    if not isinstance(validator, ProhibitNullCharactersValidator)
                ]
            cls._prepared = prepared
        return prepared

    def get_form_class(self) -> type[forms.Form]:
        # Built from the prepared filters' fields, the same for every request (a form instance
        # deep-copies its class's fields, as Django forms do).
        cls = type(self)
        form_class = cls.__dict__.get("_form_class")
        if form_class is None:
            form_class = super().get_form_class()
            cls._form_class = form_class
        return form_class

    def is_valid(self) -> bool:
        valid = super().is_valid()
        for name, declared in self.filters.items():
            if isinstance(declared, self.STRICT) and name in self.data and self.data.get(name) == "":
                self.form.add_error(name, forms.ValidationError("Give a value or leave the parameter out.", "blank"))
                valid = False
        return valid

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        if any("\x00" in str(value) for value in self.form.cleaned_data.values() if isinstance(value, str)):
            return queryset.none()
        return super().filter_queryset(queryset)


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend, which leaves a list alone when no parameter names one of its
    filters: the filterset's form would only find each one absent, and building and validating
    it was a tenth of the time of an unfiltered list."""

    def filter_queryset(self, request: Any, queryset: QuerySet, view: Any) -> QuerySet:
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is not None and request.query_params.keys().isdisjoint(filterset_class.base_filters):
            return queryset
        return super().filter_queryset(request, queryset, view)


def _benchmark_q(prefix: str, value: str) -> Q:
    """A benchmark by its native id ('062_kv_cache_update_with_rope_backward') or its
    source-native number ('62')."""
    condition = Q(**{f"{prefix}native_id": value})
    # isascii(): "³".isdigit() is True but int("³") fails (schemathesis found that 500).
    if value.isascii() and value.isdigit() and len(value) <= 9:
        condition |= Q(**{f"{prefix}numeric_id": int(value)})
    return condition


class BenchmarkIdFilter(django_filters.CharFilter):
    """The benchmark at ``field_name`` (a relation path, "" for the benchmark itself) by native
    id or number."""

    def filter(self, queryset: QuerySet, value: str) -> QuerySet:
        if value in EMPTY_VALUES:
            return queryset
        return queryset.filter(_benchmark_q(f"{self.field_name}__" if self.field_name else "", value))


class GpuFilter(django_filters.CharFilter):
    """A GPU product at ``field_name`` as any source writes it: 'B200' and 'NVIDIA B200' are one
    product (``kernelindex.gpus.normalise_product``)."""

    def filter(self, queryset: QuerySet, value: str) -> QuerySet:
        if value in EMPTY_VALUES:
            return queryset
        return queryset.filter(**{self.field_name: normalise_product(value)})


class RunColumnFilter(django_filters.CharFilter):
    """A run filter on a related row (a source by slug, a GPU's environments) asked of the run's
    own column: the related rows' ids are looked up first, one small query
    (``runs.selectors.one_of``; through the join, ?source=kernelindex took 3.6 s and
    ?project=flashinfer 12 s at 1,000,000 runs on PostgreSQL 15)."""

    def __init__(self, *args: Any, column: str, ids: Callable[[str], QuerySet], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.column, self.ids = column, ids

    def filter(self, queryset: QuerySet, value: str) -> QuerySet:
        if value in EMPTY_VALUES:
            return queryset
        ids = list(self.ids(value).values_list("pk", flat=True))
        if len(ids) > 1 and self.column in MERGEABLE:
            # Several ids: the page is read id by id and merged (api.pagination.merged).
            merge_by(self, self.column, ids)
        return queryset.filter(**one_of(self.column, ids))


def merge_by(chosen: django_filters.Filter, column: str, ids: list[int]) -> None:
    """Have the list read id by id in ``column`` (api.pagination.merged); by benchmark instead of
    by environment when it is filtered by a benchmark too (``RunBenchmarkFilter``): a benchmark's
    runs are few beside a GPU's, and its own newest-first index gives them in the list's order.
    Read by environment, ?benchmark=…&gpu=B200 intersected the benchmark's 1,001 runs with the
    GPU's 245,500 in each environment's subquery (86 ms at 1,000,000 runs; 19 ms by benchmark)."""
    request = chosen.parent.request
    if request is None:
        return
    benchmarks = getattr(request, "runs_benchmark_ids", None)
    if column == "environment_id" and benchmarks is not None:
        if not benchmarks:  # no such benchmark: the list is empty, however it is read
            return
        column, ids = "benchmark_id", benchmarks
    request.runs_merged_by = (column, ids)


# The filters that name several environments, beside which a benchmark's list is read by benchmark.
_ENVIRONMENT_FILTERS = ("gpu", "architecture")


class RunBenchmarkFilter(BenchmarkIdFilter):
    """A run's benchmark by native id or number, through the join. Beside a GPU or architecture
    filter its ids are looked up too (one query, whatever the GPU's environments), for the list to
    be read by benchmark if that filter names several environments (``merge_by``)."""

    def filter(self, queryset: QuerySet, value: str) -> QuerySet:
        request = self.parent.request
        if value not in EMPTY_VALUES and request is not None:
            if any(self.parent.data.get(name) for name in _ENVIRONMENT_FILTERS):
                ids = list(Benchmark.objects.filter(_benchmark_q("", value)).values_list("pk", flat=True))
                request.runs_benchmark_ids = ids
                merged = getattr(request, "runs_merged_by", None)
                if merged is not None and merged[0] == "environment_id":  # set by a filter before this one
                    merge_by(self, "environment_id", merged[1])
        return super().filter(queryset, value)


class BenchmarkSourceFilter(RunColumnFilter):
    """The runs of a source's benchmarks: the benchmarks' ids, and the sources whose comparison
    groups hold those benchmarks (a run's source is its group's; the source itself and
    KernelIndex for its reruns), one small query on the groups. A list reads the few sources'
    newest-first indexes, not one index per benchmark: 308 KernelBench benchmarks merged took
    0.8 s, walking the newest-first index past the newer runs 3.0 s (1,000,000 runs)."""

    def filter(self, queryset: QuerySet, value: str) -> QuerySet:
        if value in EMPTY_VALUES:
            return queryset
        sources = ComparisonGroup.objects.filter(benchmark__source__slug=value).order_by().values("source_id")
        source_ids = sorted(set(sources.values_list("source_id", flat=True)))
        if not source_ids:
            return queryset.none()
        if len(source_ids) > 1:
            merge_by(self, "source_id", source_ids)
        benchmark_ids = list(self.ids(value).values_list("pk", flat=True))
        return queryset.filter(**one_of("source_id", source_ids), **one_of("benchmark_id", benchmark_ids))


class GroupColumnFilter(django_filters.CharFilter):
    """The runs whose comparison group has ``column`` = value (harness, harness version, family),
    asked of the run's own columns. Two small queries on the groups first: their published runs
    per source, and the first ids. A few runs are read group by group (``api.pagination.merged``:
    each group's runs from the group index, sorted; at most ``FEW`` rows). More are read from
    their sources' newest-first indexes, the group's column still checked through the join.
    Through the join alone, PostgreSQL walked the newest-first index past every other run at
    1,000,000 runs: ?harness=KernelIndex+rerun+harness (32 runs) 4.1 s, ?harness=KernelBench+timing
    3.9 s, ?family=kernelindex_rerun 4.0 s; now 8-25 ms each."""

    FEW = 5000  # runs
    FEW_GROUPS = 500

    def __init__(self, *args: Any, column: str, **kwargs: Any) -> None:
        super().__init__(*args, field_name=f"group__{column}", **kwargs)
        self.column = column

    def filter(self, queryset: QuerySet, value: str) -> QuerySet:
        if value in EMPTY_VALUES:
            return queryset
        groups = ComparisonGroup.objects.filter(**{self.column: value}).order_by()
        runs = dict(groups.values_list("source_id").annotate(runs=Sum("published_runs")))
        if not runs:
            return queryset.none()
        # Always asked (two queries whatever the value); used when the groups hold few runs. As a
        # subquery instead of ids, PostgreSQL walked the newest-first index (6.4 s for 32 runs).
        ids = list(groups.order_by("pk").values_list("pk", flat=True)[: self.FEW_GROUPS + 1])
        if sum(runs.values()) <= self.FEW and len(ids) <= self.FEW_GROUPS:
            merge_by(self, "group_id", ids)  # read group by group
            return queryset.filter(**one_of("group_id", ids))
        source_ids = sorted(runs)
        if len(source_ids) > 1:
            merge_by(self, "source_id", source_ids)
        return queryset.filter(**one_of("source_id", source_ids), **{self.field_name: value})


class RunFilter(ApiFilterSet):
    source = RunColumnFilter(
        column="source_id",
        ids=lambda slug: Source.objects.filter(slug=slug),
        help_text="Source slug, e.g. sol-execbench.",
    )
    benchmark = RunBenchmarkFilter(
        field_name="benchmark", help_text="Benchmark native id (062_kv_cache_update_with_rope_backward) or number."
    )
    benchmarkSource = BenchmarkSourceFilter(
        column="benchmark_id",
        ids=lambda slug: Benchmark.objects.filter(source__slug=slug),
        help_text="Slug of the benchmark's source: sol-execbench also gives KernelIndex's reruns of its kernels.",
    )
    gpu = RunColumnFilter(
        column="environment_id",
        ids=lambda gpu: Environment.objects.filter(product=normalise_product(gpu)),
        help_text="GPU product; 'B200' and 'NVIDIA B200' are one product.",
    )
    architecture = RunColumnFilter(
        column="environment_id",
        ids=lambda architecture: Environment.objects.filter(architecture=architecture),
        help_text="e.g. sm_100.",
    )
    harness = GroupColumnFilter(column="harness_name", help_text="Harness name.")
    harnessVersion = GroupColumnFilter(column="harness_version", help_text="e.g. v1.1.")
    family = GroupColumnFilter(column="family", help_text="Comparability family.")
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    evidenceLevel = django_filters.ChoiceFilter(field_name="evidence_level", choices=EvidenceLevel.choices)
    project = RunColumnFilter(
        column="implementation_id",
        ids=lambda name: Implementation.objects.filter(Q(project__slug=name) | Q(project__name=name)),
        help_text="Project slug or full name.",
    )
    submitter = django_filters.CharFilter(field_name="submitter", help_text="Submitter name, whole.")
    observedAfter = ObservedBoundFilter(
        field_name="observed_at", lookup_expr="gte", help_text="Observed at or after (ISO 8601)."
    )
    observedBefore = ObservedBoundFilter(
        field_name="observed_at", lookup_expr="lte", help_text="Observed at or before (ISO 8601)."
    )
    comparisonKey = django_filters.CharFilter(field_name="group__key", help_text="sha256:… of a comparison group.")
    ranked = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_ranked",
        help_text="true: only runs with a rank; false: only unranked runs.",
    )

    class Meta:
        model = Run
        fields: list[str] = []

    def filter_ranked(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(rank__isnull=value != "true")


class GroupFilter(ApiFilterSet):
    source = django_filters.CharFilter(field_name="source__slug")
    benchmark = BenchmarkIdFilter(field_name="benchmark")
    gpu = GpuFilter(field_name="hardware_product")
    harness = django_filters.CharFilter(field_name="harness_name")
    harnessVersion = django_filters.CharFilter(field_name="harness_version")
    family = django_filters.CharFilter(field_name="family")

    class Meta:
        model = ComparisonGroup
        fields: list[str] = []


class BenchmarkFilter(ApiFilterSet):
    source = django_filters.CharFilter(field_name="source__slug")
    collection = django_filters.CharFilter(field_name="collection")
    nativeId = BenchmarkIdFilter(field_name="", help_text="Native id or number.")

    class Meta:
        model = Benchmark
        fields: list[str] = []


class ProtocolFilter(ApiFilterSet):
    family = django_filters.CharFilter(field_name="family")
    harness = django_filters.CharFilter(field_name="harness_name")
    harnessVersion = django_filters.CharFilter(field_name="harness_version")

    class Meta:
        model = Protocol
        fields: list[str] = []


class EnvironmentFilter(ApiFilterSet):
    gpu = GpuFilter(field_name="product")
    architecture = django_filters.CharFilter(field_name="architecture")

    class Meta:
        model = Environment
        fields: list[str] = []


class WorkloadFilter(ApiFilterSet):
    source = django_filters.CharFilter(field_name="benchmark__source__slug")
    benchmark = BenchmarkIdFilter(field_name="benchmark")

    class Meta:
        model = Workload
        fields: list[str] = []


class ImplementationFilter(ApiFilterSet):
    project = django_filters.CharFilter(method="filter_project")
    submitter = django_filters.CharFilter(field_name="submitter")

    class Meta:
        model = Implementation
        fields: list[str] = []

    def filter_project(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(Q(project__slug=value) | Q(project__name=value))


class AttestationFilter(ApiFilterSet):
    run = django_filters.CharFilter(field_name="run__public_id", help_text="Public id of the run.")
    kind = django_filters.ChoiceFilter(choices=AttestationKind.choices)

    class Meta:
        model = Attestation
        fields: list[str] = []
