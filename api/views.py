"""DRF viewsets of /api/v1/. One base (``ApiMixin``) gives every endpoint the same
authentication, throttles, pagination and error format; QuerySets come from the models'
QuerySet methods and ``runs.selectors`` — the same reads as the pages, so the eligibility rule
and the ranking query exist once.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, F, IntegerField, OuterRef, Prefetch, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from api import exports, filters, items, serializers
from api.conditional import VersionedMixin
from api.exceptions import ApiError
from api.models import ApiToken
from api.pagination import Key, KeysetPagination
from api.parsers import BoundedJSONParser, CanonicalJSONParser
from api.permissions import HasApiToken
from api.services import ManifestError, SubmissionRefused, manifest_submit
from api.throttling import AnonThrottle, SubmissionThrottle, TokenThrottle
from attestations import submissions
from attestations.forms import AttestationForm, IssueReportForm
from attestations.models import Attestation
from kernelindex import ratelimit
from kernelindex.clients import client_key
from runs import selectors
from runs.manifests import DIGEST_FIELDS
from runs.models import (
    Benchmark,
    ComparisonGroup,
    Environment,
    Implementation,
    Protocol,
    Run,
    Source,
    Visibility,
    Workload,
)
from runs.ordering import KEYSET_FIRST_TIME, KEYSET_LAST_FLOAT, KEYSET_LAST_INT, KEYSET_LAST_TIME, Sentinel

# Sentinels that sort after every real value, so nulls come last in both directions.
# runs.models indexes the runs' orderings on these same expressions.
_LAST_INT = KEYSET_LAST_INT
_LAST_FLOAT = KEYSET_LAST_FLOAT
_FIRST_TIME = KEYSET_FIRST_TIME
_LAST_TIME = KEYSET_LAST_TIME


def _count(model: Any, field: str, **conditions: Any) -> Coalesce:
    """A correlated COUNT(*) (one subquery per row, no GROUP BY over the outer query)."""
    counted = (
        model.objects.filter(**{field: OuterRef("pk")}, **conditions)
        .order_by()
        .values(field)
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


class JsonOnlyNegotiation(DefaultContentNegotiation):
    """The API speaks JSON whatever the Accept header says (exports stream their own types)."""

    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> Any:
        return renderers[0], renderers[0].media_type


class ApiMixin(VersionedMixin):
    pagination_class = KeysetPagination
    throttle_classes = [AnonThrottle, TokenThrottle]
    content_negotiation_class = JsonOnlyNegotiation
    metadata_class = None  # OPTIONS answers 405 (CORS preflights are answered by the middleware)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # No stored id, key or digest contains NUL (PostgreSQL text cannot even hold one), so
        # such a path names nothing: answer 404 before it reaches a query.
        if any("\x00" in str(value) for value in kwargs.values()):
            raise Http404("No object has this identifier.")
        # An unsupported method is 405 whoever asks (DRF would check the token first).
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):  # type: ignore[attr-defined]
            raise MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)  # type: ignore[misc]


ROOT_LINKS = (
    "runs",
    "groups",
    "benchmarks",
    "sources",
    "protocols",
    "environments",
    "workloads",
    "implementations",
    "attestations",
    "manifests",
)


class ApiRootView(ApiMixin, GenericAPIView):
    """Where everything is: the endpoints, the schema and the docs."""

    pagination_class = None
    serializer_class = serializers.ApiRootSerializer

    @extend_schema(summary="API index", responses={200: serializers.ApiRootSerializer})
    def get(self, request: Request) -> Response:
        base = request.build_absolute_uri("/api/")
        return Response(
            {
                "endpoints": {name: f"{base}v1/{name}/" for name in ROOT_LINKS},
                "schema": f"{base}schema/",
                "docs": f"{base}docs/",
            }
        )


# -- runs --------------------------------------------------------------------------------------

RUN_ORDERINGS = {
    "-observedAt": [
        Key("k_observed", Coalesce(F("observed_at"), Sentinel(_FIRST_TIME)), True, "datetime"),
        Key("public_id", None, False, "str"),
    ],
    "observedAt": [
        Key("k_observed", Coalesce(F("observed_at"), Sentinel(_LAST_TIME)), False, "datetime"),
        Key("public_id", None, False, "str"),
    ],
    "rank": [
        Key("k_rank", Coalesce(F("rank"), Sentinel(_LAST_INT)), False, "int"),
        Key("k_latency", Coalesce(F("latency_ns"), Sentinel(_LAST_FLOAT)), False, "float"),
        Key("public_id", None, False, "str"),
    ],
    "latency": [
        Key("k_latency", Coalesce(F("latency_ns"), Sentinel(_LAST_FLOAT)), False, "float"),
        Key("public_id", None, False, "str"),
    ],
    "-latency": [
        Key("k_latency", Coalesce(F("latency_ns"), Sentinel(-1.0)), True, "float"),
        Key("public_id", None, False, "str"),
    ],
}

_RUN_DETAIL_RESPONSES = {
    200: serializers.RunDetailSerializer,
    410: OpenApiResponse(
        serializers.RunTombstoneSerializer,
        description="A hidden or retracted run: its permalink stays, with the public reason.",
    ),
}


def _export_schema(media_type: str, description: str) -> Any:
    return extend_schema(
        responses={(200, media_type): OpenApiResponse(OpenApiTypes.STR, description=description)},
        filters=True,
    )


@functools.cache
def _run_rows() -> QuerySet[Run]:
    """The values of every published run's item, as a queryset to clone (never evaluated)."""
    return Run.objects.visible().values(*items.RUN_ITEM_VALUES)


@extend_schema_view(
    list=extend_schema(summary="Runs", description="Published runs, filtered; cursor-paginated."),
    retrieve=extend_schema(summary="One run", responses=_RUN_DETAIL_RESPONSES),
)
class RunViewSet(ApiMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = serializers.RunSerializer
    filter_backends = [filters.FilterBackend]
    filterset_class = filters.RunFilter
    lookup_field = "public_id"
    lookup_url_kwarg = "id"
    lookup_value_regex = "[^/]+"
    orderings = RUN_ORDERINGS
    default_ordering = "-observedAt"
    # The order a list filtered by several environments or benchmarks reads id by id (api.pagination.merged).
    merged_ordering = RUN_ORDERINGS["-observedAt"]

    def get_queryset(self) -> QuerySet[Run]:
        if self.action in ("list", "export_jsonl"):
            # Items only (items.run_item): the values they show, one dictionary a row. Model
            # instances of the run and its seven joined rows were a fifth of a list's CPU, and
            # setting up the values() query for its 31 values a tenth of what was left.
            rows = _run_rows().all()
            rows.first_pages_prepared = True  # gone from any queryset made from it (a filter's)
            return rows
        return Run.objects.visible().for_listing()

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.versioned(request, lambda: self._run(kwargs["id"]))

    def _run(self, public_id: str) -> Response:
        try:
            run = selectors.run_get(public_id)
        except selectors.RunGone as gone:
            data = serializers.RunTombstoneSerializer(gone.run).data
            return Response(data, status=status.HTTP_410_GONE)
        return Response(serializers.RunDetailSerializer(run).data)

    def _export_queryset(self) -> QuerySet[Run]:
        return self.filter_queryset(self.get_queryset()).order_by("public_id")

    @_export_schema("text/csv", "One row per run, a header row first; streamed.")
    @action(detail=False, methods=["get"], url_path="export/csv", pagination_class=None)
    def export_csv(self, request: Request) -> HttpResponseBase:
        return exports.streamed(
            exports.csv_lines(self._export_queryset()), content_type="text/csv; charset=utf-8", filename="runs.csv"
        )

    @_export_schema(exports.JSONL, "One run item (as in the list) per line; streamed.")
    @action(detail=False, methods=["get"], url_path="export/jsonl", pagination_class=None)
    def export_jsonl(self, request: Request) -> HttpResponseBase:
        return exports.streamed(
            exports.jsonl_lines(self._export_queryset()), content_type=exports.JSONL, filename="runs.jsonl"
        )

    @_export_schema(
        exports.JSONL,
        "One canonical manifest bundle per line, exactly as `manage.py export` writes them (published "
        "runs only); `manage.py import` reads the file back with every digest unchanged.",
    )
    @action(detail=False, methods=["get"], url_path="export/bundles", pagination_class=None)
    def export_bundles(self, request: Request) -> HttpResponseBase:
        return exports.streamed(
            # The bundles carry every document a list leaves out (Run.objects.for_listing).
            exports.bundle_lines(self.filter_queryset(self.get_queryset()).defer(None)),
            content_type=exports.JSONL,
            filename="runs.manifests.jsonl",
        )


# -- groups ------------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="Comparison groups", description="Every ranking, with its run count."),
    retrieve=extend_schema(
        summary="A group's ranking",
        description="The ranking of one comparison group: ranked runs in order, the source's reference rows "
        "(isReference: true) in place and unranked. Ranks are the stored ranks every page shows.",
        responses={200: serializers.GroupRankingSerializer},
    ),
)
class GroupViewSet(ApiMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = serializers.GroupListSerializer
    filter_backends = [filters.FilterBackend]
    filterset_class = filters.GroupFilter
    lookup_field = "key"
    lookup_value_regex = "[^/]+"
    orderings = {
        "benchmark": [
            Key("k_benchmark", F("benchmark__native_id"), False, "str"),
            Key("hardware_product", None, False, "str"),
            Key("harness_version", None, False, "str"),
            Key("key", None, False, "str"),
        ],
        "-runCount": [Key("run_count", None, True, "int"), Key("key", None, False, "str")],
    }
    default_ordering = "benchmark"

    def get_queryset(self) -> QuerySet[ComparisonGroup]:
        groups = ComparisonGroup.objects.annotate(run_count=F("published_runs"))
        if self.action == "list":
            # Items only (items.group_items): the values they show, no instances; the first
            # page's query compiled once (api.pagination).
            rows = groups.values(*items.GROUP_LIST_VALUES)
            rows.first_pages_prepared = True  # gone from any queryset made from it (a filter's)
            return rows
        return groups.select_related("source", "benchmark", "benchmark__source")

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.versioned(request, lambda: self._ranking(kwargs["key"]))

    def _ranking(self, key: str) -> Response:
        group = selectors.group_get(key)
        group.ranking_rows = selectors.attach_group(list(selectors.ranking_rows(group)), group)
        return Response(serializers.GroupRankingSerializer(group).data)


# -- catalogue ---------------------------------------------------------------------------------


@extend_schema_view(list=extend_schema(summary="Benchmarks", description="Benchmarks with their comparison groups."))
class BenchmarkViewSet(ApiMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = serializers.BenchmarkSerializer
    filter_backends = [filters.FilterBackend]
    filterset_class = filters.BenchmarkFilter
    orderings = {
        "nativeId": [Key("k_source", F("source__slug"), False, "str"), Key("native_id", None, False, "str")],
        "-runCount": [Key("run_count", None, True, "int"), Key("id", None, False, "int")],
    }
    default_ordering = "nativeId"

    def get_queryset(self) -> QuerySet[Benchmark]:
        groups = ComparisonGroup.objects.order_by("hardware_product", "harness_name", "harness_version", "key")
        return (
            Benchmark.objects.for_listing()
            .annotate(run_count=F("published_runs"))
            # One query for the groups of the whole page, not one per benchmark.
            .prefetch_related(Prefetch("groups", queryset=groups, to_attr="listed_groups"))
        )


@extend_schema_view(
    list=extend_schema(summary="Sources"),
    retrieve=extend_schema(summary="One source"),
)
class SourceViewSet(ApiMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = serializers.SourceSerializer
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"
    orderings = {"slug": [Key("slug", None, False, "str")]}
    default_ordering = "slug"

    def get_queryset(self) -> QuerySet[Source]:
        return Source.objects.annotate(
            run_count=F("published_runs"),
            # Every benchmark of its catalogue (Source.benchmark_count counts those with runs).
            catalogue_benchmarks=_count(Benchmark, "source"),
        )

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.versioned(request, lambda: Response(self.get_serializer(self.get_object()).data))


class DocumentViewSet(ApiMixin, viewsets.ReadOnlyModelViewSet):
    """Protocols, environments, workloads, implementations: canonical documents by digest."""

    lookup_field = "digest"
    lookup_value_regex = "[^/]+"
    filter_backends = [filters.FilterBackend]
    orderings = {
        "name": [Key("name", None, False, "str"), Key("digest", None, False, "str")],
        "-createdAt": [Key("created_at", None, True, "datetime"), Key("digest", None, False, "str")],
    }
    default_ordering = "name"
    detail_serializer_class: Any = None

    def get_serializer_class(self) -> Any:
        return self.detail_serializer_class if self.action == "retrieve" else self.serializer_class

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.versioned(request, lambda: Response(self.get_serializer(self.get_object()).data))


def _document_schema(name: str, detail: Any) -> Any:
    return extend_schema_view(
        list=extend_schema(summary=f"{name}s"),
        retrieve=extend_schema(summary=f"One {name.lower()}, with its canonical document", responses={200: detail}),
    )


@_document_schema("Protocol", serializers.ProtocolDetailSerializer)
class ProtocolViewSet(DocumentViewSet):
    queryset = Protocol.objects.all()
    serializer_class = serializers.ProtocolSerializer
    detail_serializer_class = serializers.ProtocolDetailSerializer
    filterset_class = filters.ProtocolFilter


@_document_schema("Environment", serializers.EnvironmentDetailSerializer)
class EnvironmentViewSet(DocumentViewSet):
    # Only environments a visible run uses: hidden and retracted runs' documents stay hidden.
    queryset = Environment.objects.public()
    serializer_class = serializers.EnvironmentSerializer
    detail_serializer_class = serializers.EnvironmentDetailSerializer
    filterset_class = filters.EnvironmentFilter


@_document_schema("Workload", serializers.WorkloadDetailSerializer)
class WorkloadViewSet(DocumentViewSet):
    queryset = Workload.objects.select_related("benchmark", "benchmark__source")
    serializer_class = serializers.WorkloadSerializer
    detail_serializer_class = serializers.WorkloadDetailSerializer
    filterset_class = filters.WorkloadFilter


@_document_schema("Implementation", serializers.ImplementationDetailSerializer)
class ImplementationViewSet(DocumentViewSet):
    # Only implementations a visible run uses: hidden and retracted runs' documents stay hidden.
    queryset = Implementation.objects.public().select_related("project")
    serializer_class = serializers.ImplementationSerializer
    detail_serializer_class = serializers.ImplementationDetailSerializer
    filterset_class = filters.ImplementationFilter


@extend_schema_view(
    list=extend_schema(
        summary="Published attestations",
        description="Community reproductions and notes a moderator published. They never change a run's "
        "evidence level.",
    )
)
class AttestationViewSet(ApiMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = serializers.AttestationSerializer
    filter_backends = [filters.FilterBackend]
    filterset_class = filters.AttestationFilter
    orderings = {"-createdAt": [Key("created_at", None, True, "datetime"), Key("id", None, True, "int")]}
    default_ordering = "-createdAt"

    def get_queryset(self) -> QuerySet[Attestation]:
        return Attestation.objects.published().filter(run__visibility=Visibility.PUBLISHED).select_related("run")


# -- writes ------------------------------------------------------------------------------------


_ROLE_PATH = re.compile(
    r"\b(run|protocol|environment|workload|implementation) (?:document )?"
    r"((?:spec|metadata)(?:\.[\w]+|\[\d+\])+(?:\.dev/[\w-]+)?)"
)
_DIGEST_MISMATCH = re.compile(r"digest mismatch for the (\w+) document")
_CANONICAL_PATH = re.compile(r"\$\.([\w.\[\]]+)")


def _manifest_error(error: ManifestError) -> ApiError:
    message = str(error)
    mismatch = _DIGEST_MISMATCH.search(message)
    if mismatch and mismatch.group(1) in DIGEST_FIELDS:
        return ApiError("digest_mismatch", message, field=f"run.spec.{DIGEST_FIELDS[mismatch.group(1)]}")
    path = _ROLE_PATH.search(message) or None
    if path:
        return ApiError("invalid_manifest", message, field=f"{path.group(1)}.{path.group(2)}")
    canonical_path = _CANONICAL_PATH.search(message)
    return ApiError("invalid_manifest", message, field=canonical_path.group(1) if canonical_path else None)


class ManifestView(ApiMixin, GenericAPIView):
    permission_classes = [HasApiToken]
    throttle_classes = [SubmissionThrottle, TokenThrottle, AnonThrottle]
    parser_classes = [CanonicalJSONParser]
    pagination_class = None
    serializer_class = serializers.SubmissionSerializer

    @extend_schema(
        summary="Submit a run",
        description=(
            "Records the run of a canonical manifest bundle (DESIGN §2) after verifying every declared digest. "
            "The run's evidence level is `submitter_reported`, attributed to the token's owner; a token with the "
            "rerun permission records bundles of the KernelIndex rerun harness (protocol family "
            "`kernelindex_rerun`) as `kernelindex_rerun`. KernelIndex annotations in the bundle are ignored. "
            "Sending the same bundle again changes nothing (200, outcome `unchanged`)."
        ),
        request=serializers.ManifestBundleSerializer,
        responses={201: serializers.SubmissionSerializer, 200: serializers.SubmissionSerializer},
    )
    def post(self, request: Request) -> Response:
        token = request.auth
        assert isinstance(token, ApiToken)  # HasApiToken guarantees it
        try:
            submission = manifest_submit(bundle=request.data, token=token)
        except ManifestError as error:
            raise _manifest_error(error) from None
        except SubmissionRefused as refused:
            raise ApiError(refused.code, refused.message, field=refused.field, status_code=refused.status) from None
        data = serializers.SubmissionSerializer(submission).data
        code = status.HTTP_201_CREATED if submission.outcome == "created" else status.HTTP_200_OK
        response = Response(data, status=code)
        response["Location"] = items.permalink(submission.run)
        return response


# The API's camelCase names of the form fields; validation and errors are the forms'.
ATTESTATION_FIELDS = {
    "kind": "kind",
    "measuredValue": "measured_value",
    "measuredUnit": "measured_unit",
    "measuredStatistic": "measured_statistic",
    "casesReproduced": "cases_reproduced",
    "casesMatched": "cases_matched",
    "gpuProduct": "gpu_product",
    "driverVersion": "driver_version",
    "cudaVersion": "cuda_version",
    "torchVersion": "torch_version",
    "command": "command",
    "link": "link",
    "text": "text",
}
REPORT_FIELDS = {"category": "category", "description": "description", "contactEmail": "contact_email"}


class _RunPostView(ApiMixin, GenericAPIView):
    """POST about one run through the same form, service and rate limit as its web page."""

    throttle_classes = [SubmissionThrottle, TokenThrottle, AnonThrottle]
    parser_classes = [BoundedJSONParser]
    pagination_class = None
    fields_map: dict[str, str] = {}
    form_class: Any = None

    def _run(self, public_id: str) -> Run:
        # Tombstones (hidden, retracted) take no new attestations or reports, as on the pages.
        run = Run.objects.visible().select_related("benchmark", "source").filter(public_id=public_id).first()
        if run is None:
            raise Http404(f"No published run {public_id}.")
        return run

    def _form(self, request: Request, run: Run) -> Any:
        data = request.data
        if not isinstance(data, dict):
            raise ApiError("invalid", "The body must be a JSON object.")
        unknown = sorted(set(data) - set(self.fields_map))
        if unknown:
            raise ApiError("invalid", f"Unknown field {unknown[0]!r}.", field=unknown[0])
        form = self.form_class({self.fields_map[name]: value for name, value in data.items()}, run=run)
        if not form.is_valid():
            back = {form_name: api_name for api_name, form_name in self.fields_map.items()}
            details = [
                {"field": back.get(name), "message": str(message), "code": "invalid"}
                for name, messages in form.errors.items()
                for message in messages
            ]
            first = details[0]
            error = ApiError("invalid", first["message"], field=first["field"])
            error.details = details
            raise error
        return form

    def _rate_limit(self, request: Request) -> None:
        allowed, retry_after = ratelimit.check(request, ratelimit.SUBMISSIONS)
        if not allowed:
            from rest_framework.exceptions import Throttled

            raise Throttled(wait=retry_after)

    def create(self, request: Request, run: Run, form: Any) -> Any:
        """Store the submission (``attestations.submissions``); the subclass names which."""
        raise NotImplementedError

    def post(self, request: Request, id: str) -> Response:  # noqa: A002 (the URL's name)
        run = self._run(id)
        self._rate_limit(request)
        form = self._form(request, run)
        try:
            received = self.create(request, run, form)
        except DjangoValidationError as error:
            raise ApiError("invalid", " ".join(error.messages)) from None
        return Response(
            {"reference": received.reference, "state": received.state, "run": run.public_id},
            status=status.HTTP_201_CREATED,
        )


@extend_schema_view(
    post=extend_schema(
        summary="Add a reproduction or note",
        description="Queued for moderation exactly like the web form; published once a moderator approves it.",
        request=serializers.AttestationInputSerializer,
        responses={201: serializers.ReceivedSerializer},
    )
)
class AttestationCreateView(_RunPostView):
    fields_map = ATTESTATION_FIELDS
    form_class = AttestationForm
    serializer_class = serializers.ReceivedSerializer

    def create(self, request: Request, run: Run, form: Any) -> Any:
        return submissions.attestation_create(
            run=run, author=request.user, client_key=client_key(request), **form.service_kwargs()
        )


@extend_schema_view(
    post=extend_schema(
        summary="Report an issue with a run",
        description="Seen by moderators only, exactly like the web form's reports.",
        request=serializers.ReportInputSerializer,
        responses={201: serializers.ReceivedSerializer},
    )
)
class ReportCreateView(_RunPostView):
    fields_map = REPORT_FIELDS
    form_class = IssueReportForm
    serializer_class = serializers.ReceivedSerializer

    def create(self, request: Request, run: Run, form: Any) -> Any:
        return submissions.issue_report_create(
            run=run, reporter=request.user, client_key=client_key(request), **form.service_kwargs()
        )
