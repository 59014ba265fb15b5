"""JSON shapes of the API. Field names are camelCase like the manifests (``externalId``,
``observedAt``); ``timing`` and ``metrics`` are the run document's own objects, as published.

Serializers only read attributes the viewsets' QuerySets have already joined in, so a page of
runs costs one query however long it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.items import group_item, group_items, permalink, run_item, run_items, spec_object
from api.models import RerunTarget
from attestations.forms import STATISTICS
from attestations.models import UNIT_NS, AttestationKind, ReportCategory
from kernelindex.gpus import architecture_for
from runs import ranking, selectors
from runs.manifests import KINDS
from runs.models import ComparisonGroup, Run


class PermalinkField(serializers.Field):
    """The permalink of the object itself."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["source"] = "*"
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str:
        return permalink(value)


extend_schema_field({"type": "string", "format": "uri"})(PermalinkField)


def with_the_other_fields(serializer: serializers.Serializer, instance: Any, item: dict[str, Any]) -> dict[str, Any]:
    """``item`` (built by one function of api.items) with the serializer's declared fields it
    lacks, each added as DRF's own pass would add it (a subclass's extra fields). Which fields
    those are is worked out once per serializer: a list's items all have the same keys, and
    walking every declared field of every item cost a sixth of a groups list."""
    missing = serializer.__dict__.get("_ki_missing")
    if missing is None:
        missing = serializer.__dict__["_ki_missing"] = [
            field for field in serializer._readable_fields if field.field_name not in item
        ]
    for field in missing:
        attribute = field.get_attribute(instance)
        item[field.field_name] = None if attribute is None else field.to_representation(attribute)
    return item


class SourceRefSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class BenchmarkRefSerializer(serializers.Serializer):
    source = serializers.CharField(source="source.slug")
    nativeId = serializers.CharField(source="native_id")
    title = serializers.CharField()
    url = PermalinkField()


class ProjectRefSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    url = PermalinkField()


class HardwareSerializer(serializers.Serializer):
    product = serializers.CharField()
    architecture = serializers.CharField()
    environmentDigest = serializers.CharField(source="digest")


class HarnessSerializer(serializers.Serializer):
    name = serializers.CharField(source="harness_name")
    version = serializers.CharField(source="harness_version")
    family = serializers.CharField()
    protocolDigest = serializers.CharField(source="digest")


class RowsListSerializer(serializers.ListSerializer):
    """A list whose rows are a list's values() rows, or its first page's named tuples (api.views,
    api.pagination): all built by ``items`` in one call; model instances field by field."""

    items: Callable[[list[Any]], list[dict[str, Any]]]

    def to_representation(self, data: Any) -> list[dict[str, Any]]:
        rows = list(data)
        if all(isinstance(row, (dict, tuple)) for row in rows):
            return type(self).items(rows)
        return super().to_representation(rows)


class RunListSerializer(RowsListSerializer):
    items = staticmethod(run_items)


class RunSerializer(serializers.Serializer):
    """One run, as lists and rankings show it."""

    class Meta:
        list_serializer_class = RunListSerializer

    id = serializers.CharField(source="public_id", help_text="The run's public id (its permalink).")
    url = PermalinkField(help_text="The run's permanent page.")
    digest = serializers.CharField(help_text="sha256 of the canonical BenchmarkRun document.")
    externalId = serializers.CharField(source="external_id", help_text="The source's own id of the run.")
    title = serializers.CharField()
    source = serializers.CharField(source="source.slug")
    benchmark = BenchmarkRefSerializer()
    comparisonKey = serializers.CharField(source="group.key", help_text="Names the run's ranking (comparison group).")
    rank = serializers.IntegerField(allow_null=True, help_text="Rank in its comparison group; null when unranked.")
    sourceRank = serializers.IntegerField(source="source_rank", allow_null=True, help_text="Rank the source published.")
    isReference = serializers.BooleanField(source="is_reference", help_text="A source's reference row: unranked.")
    status = serializers.CharField()
    evidenceLevel = serializers.CharField(source="evidence_level")
    quarantined = serializers.BooleanField()
    submitter = serializers.CharField()
    project = serializers.SerializerMethodField()
    hardware = HardwareSerializer(source="environment")
    harness = HarnessSerializer(source="protocol")
    primaryStatistic = serializers.CharField(source="primary_statistic")
    latencyNs = serializers.FloatField(source="latency_ns", allow_null=True, help_text="Primary statistic, ns.")
    observedAt = serializers.DateTimeField(source="observed_at", allow_null=True)
    publishedAt = serializers.DateTimeField(source="published_at")
    timing = serializers.SerializerMethodField()
    metrics = serializers.SerializerMethodField()

    def to_representation(self, run: Run) -> dict[str, Any]:
        # The fields above declare the shape (and the OpenAPI schema); the item itself is built
        # in one function (run_item): a field-by-field pass with three nested serializers per
        # row was most of a list page's time. tests/api pins both to the same output.
        return run_item(run)

    @extend_schema_field(ProjectRefSerializer(allow_null=True))
    def get_project(self, run: Run) -> dict[str, Any] | None:
        implementation = run.implementation
        if implementation is None or implementation.project is None:
            return None
        return ProjectRefSerializer(implementation.project).data

    @extend_schema_field(
        {
            "type": "object",
            "additionalProperties": True,
            "description": "spec.timing of the run document: latencyNs by statistic, primaryStatistic…",
        }
    )
    def get_timing(self, run: Run) -> dict[str, Any]:
        return spec_object(run, "timing")

    @extend_schema_field(
        {
            "type": "object",
            "additionalProperties": True,
            "description": "spec.sourceNative.metrics: the metrics as the source published them.",
        }
    )
    def get_metrics(self, run: Run) -> dict[str, Any]:
        return spec_object(run, "sourceNative", "metrics")


class RunDisplaySerializer(serializers.Serializer):
    implementation = serializers.CharField()
    project = serializers.CharField()
    revision = serializers.CharField()
    externalId = serializers.CharField()


class RunDetailSerializer(RunSerializer):
    """One run with what its page adds: the declared digests, labels, provenance."""

    def to_representation(self, run: Run) -> dict[str, Any]:
        # The fields this class adds, the DRF way (one run per request).
        return with_the_other_fields(self, run, run_item(run))

    visibility = serializers.CharField()
    statusDetail = serializers.CharField(source="status_detail")
    revision = serializers.IntegerField()
    labels = serializers.DictField(child=serializers.CharField(), allow_empty=True)
    protocolDigest = serializers.CharField(source="protocol_digest")
    environmentDigest = serializers.CharField(source="environment_digest")
    workloadDigest = serializers.CharField(source="workload_digest")
    implementationDigest = serializers.CharField(source="implementation_digest")
    provenanceUrl = serializers.CharField(source="provenance_url")
    dataQualityNote = serializers.CharField(
        source="data_quality_note", help_text="Set when the row breaks a source identity; empty otherwise."
    )
    retrievedAt = serializers.DateTimeField(source="retrieved_at", allow_null=True)
    manifestUrl = serializers.SerializerMethodField()
    display = serializers.SerializerMethodField(
        help_text="Implementation, project, revision and external id exactly as the run's page shows them."
    )
    cases = serializers.SerializerMethodField()

    @extend_schema_field({"type": "string", "format": "uri"})
    def get_manifestUrl(self, run: Run) -> str:  # noqa: N802 (DRF names the method after the field)
        return settings.SITE_URL + f"/runs/{run.public_id}.json"

    @extend_schema_field(RunDisplaySerializer)
    def get_display(self, run: Run) -> dict[str, str]:
        # The page's own labels (runs.selectors), so the JSON and the page never disagree.
        labels = selectors.identity_labels(run)
        return {
            "implementation": labels["implementation"],
            "project": labels["project"],
            "revision": labels["revision"],
            "externalId": labels["external_id"],
        }

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
    def get_cases(self, run: Run) -> list[Any]:
        cases = run.spec.get("cases")
        return cases if isinstance(cases, list) else []


class RunTombstoneSerializer(serializers.Serializer):
    """A hidden or retracted run: its permalink stays, with the public reason."""

    id = serializers.CharField(source="public_id")
    url = PermalinkField()
    digest = serializers.CharField()
    visibility = serializers.CharField()
    publicReason = serializers.CharField(source="public_reason")


class RankingRuleSerializer(serializers.Serializer):
    metric = serializers.CharField(source="ranking_metric")
    direction = serializers.CharField(source="ranking_direction")
    bestPer = serializers.CharField(source="best_per")
    description = serializers.SerializerMethodField()

    def get_description(self, group: ComparisonGroup) -> str:
        return ranking.RankingRule(group.ranking_metric, group.ranking_direction, group.best_per).description


class GroupSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The comparison key: sha256 of the canonical keyDocument.")
    url = PermalinkField()
    source = serializers.CharField(source="source.slug")
    benchmark = BenchmarkRefSerializer()
    family = serializers.CharField()
    hardwareProduct = serializers.CharField(source="hardware_product")
    architecture = serializers.SerializerMethodField()
    harnessName = serializers.CharField(source="harness_name")
    harnessVersion = serializers.CharField(source="harness_version")
    keyDocument = serializers.SerializerMethodField()
    ranking = RankingRuleSerializer(source="*")

    def to_representation(self, group: ComparisonGroup) -> dict[str, Any]:
        # The fields above declare the shape and the schema; the item is built in one function
        # (group_item), and a subclass's own fields are added the DRF way. tests/api pins both
        # ways to the same output.
        return with_the_other_fields(self, group, group_item(group))

    def get_architecture(self, group: ComparisonGroup) -> str:
        return architecture_for(group.hardware_product)

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_keyDocument(self, group: ComparisonGroup) -> Any:  # noqa: N802
        return json.loads(group.key_document)


class GroupListListSerializer(RowsListSerializer):
    items = staticmethod(group_items)


class GroupListSerializer(GroupSerializer):
    class Meta:
        list_serializer_class = GroupListListSerializer

    runCount = serializers.IntegerField(source="run_count", help_text="Published runs in the group.")


class GroupRankingSerializer(GroupSerializer):
    rows = RunSerializer(
        many=True,
        source="ranking_rows",
        help_text="Ranked runs in ranking order, with the source's reference rows (isReference) in place.",
    )


class BenchmarkGroupSerializer(serializers.Serializer):
    key = serializers.CharField()
    hardwareProduct = serializers.CharField(source="hardware_product")
    harnessName = serializers.CharField(source="harness_name")
    harnessVersion = serializers.CharField(source="harness_version")
    family = serializers.CharField()


class BenchmarkSerializer(serializers.Serializer):
    source = serializers.CharField(source="source.slug")
    nativeId = serializers.CharField(source="native_id")
    numericId = serializers.IntegerField(source="numeric_id", allow_null=True)
    title = serializers.CharField()
    collection = serializers.CharField()
    hfModelId = serializers.CharField(source="hf_model_id")
    tags = serializers.ListField(child=serializers.CharField())
    url = PermalinkField()
    runCount = serializers.IntegerField(source="run_count")
    groups = BenchmarkGroupSerializer(many=True, source="listed_groups")


class SourceSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    homepage = serializers.CharField(source="url")
    description = serializers.CharField()
    url = PermalinkField()
    runCount = serializers.IntegerField(source="run_count")
    benchmarkCount = serializers.IntegerField(source="catalogue_benchmarks")


class DocumentSerializer(serializers.Serializer):
    digest = serializers.CharField()
    name = serializers.CharField()
    title = serializers.CharField()


class DocumentDetailMixin(serializers.Serializer):
    manifest = serializers.SerializerMethodField(help_text="The canonical document as stored (its digest's input).")

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_manifest(self, obj: Any) -> dict[str, Any]:
        return obj.doc


class ProtocolSerializer(DocumentSerializer):
    harnessName = serializers.CharField(source="harness_name")
    harnessVersion = serializers.CharField(source="harness_version")
    family = serializers.CharField()
    timer = serializers.CharField()
    primaryStatistic = serializers.CharField(source="primary_statistic")


class ProtocolDetailSerializer(ProtocolSerializer, DocumentDetailMixin):
    pass


class EnvironmentSerializer(DocumentSerializer):
    vendor = serializers.CharField()
    product = serializers.CharField()
    architecture = serializers.CharField()
    url = PermalinkField()


class EnvironmentDetailSerializer(EnvironmentSerializer, DocumentDetailMixin):
    pass


class WorkloadSerializer(DocumentSerializer):
    benchmark = BenchmarkRefSerializer(allow_null=True)
    caseCount = serializers.IntegerField(source="case_count")


class WorkloadDetailSerializer(WorkloadSerializer, DocumentDetailMixin):
    pass


class ImplementationSerializer(DocumentSerializer):
    project = ProjectRefSerializer(allow_null=True)
    submitter = serializers.CharField()
    revision = serializers.CharField()


class ImplementationDetailSerializer(ImplementationSerializer, DocumentDetailMixin):
    pass


class MeasurementSerializer(serializers.Serializer):
    value = serializers.FloatField(source="measured_value")
    unit = serializers.CharField(source="measured_unit")
    statistic = serializers.CharField(source="measured_statistic")


class AttestationSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    reference = serializers.CharField()
    run = serializers.CharField(source="run.public_id")
    runUrl = serializers.SerializerMethodField()
    kind = serializers.CharField()
    digest = serializers.CharField()
    author = serializers.CharField(source="author_label")
    measurement = serializers.SerializerMethodField()
    text = serializers.CharField()
    link = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")
    reviewedAt = serializers.DateTimeField(source="reviewed_at", allow_null=True)
    manifest = serializers.SerializerMethodField()

    @extend_schema_field({"type": "string", "format": "uri"})
    def get_runUrl(self, attestation: Any) -> str:  # noqa: N802
        return permalink(attestation.run)

    @extend_schema_field(MeasurementSerializer(allow_null=True))
    def get_measurement(self, attestation: Any) -> dict[str, Any] | None:
        if attestation.measured_value is None:
            return None
        return MeasurementSerializer(attestation).data

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_manifest(self, attestation: Any) -> dict[str, Any]:
        return attestation.doc


# -- writes ------------------------------------------------------------------------------------


class ManifestDocumentSerializer(serializers.Serializer):
    """One canonical document (DESIGN §2). Documentation of the request body; the bundle itself
    is checked by runs.manifests.bundle_verify, the same check every import runs."""

    apiVersion = serializers.ChoiceField(choices=["kernelindex.dev/v1alpha1"])
    kind = serializers.ChoiceField(choices=sorted(KINDS.values()))
    metadata = serializers.DictField(required=False)
    spec = serializers.DictField()


class ManifestBundleSerializer(serializers.Serializer):
    run = ManifestDocumentSerializer()
    protocol = ManifestDocumentSerializer()
    environment = ManifestDocumentSerializer()
    workload = ManifestDocumentSerializer(required=False)
    implementation = ManifestDocumentSerializer(required=False)


class SubmissionSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=["created", "updated", "unchanged"],
        help_text="created (201); updated or unchanged (200) when this run was submitted before.",
    )
    run = RunSerializer()


class ErrorDetailSerializer(serializers.Serializer):
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    code = serializers.CharField()


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable error code.")
    message = serializers.CharField(help_text="What went wrong, for people.")
    field = serializers.CharField(allow_null=True, help_text="The offending field or parameter, if one.")
    details = ErrorDetailSerializer(many=True)


class ErrorSerializer(serializers.Serializer):
    error = ErrorBodySerializer()


class AttestationInputSerializer(serializers.Serializer):
    """The body of POST /runs/{id}/attestations/: the web form's fields, camelCase."""

    kind = serializers.ChoiceField(choices=AttestationKind.choices)
    measuredValue = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=1e15)
    measuredUnit = serializers.ChoiceField(choices=list(UNIT_NS), required=False, allow_blank=True)
    measuredStatistic = serializers.ChoiceField(choices=[name for name, _ in STATISTICS], required=False)
    casesReproduced = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1_000_000)
    casesMatched = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=1_000_000)
    gpuProduct = serializers.CharField(required=False, allow_blank=True, max_length=200)
    driverVersion = serializers.CharField(required=False, allow_blank=True, max_length=100)
    cudaVersion = serializers.CharField(required=False, allow_blank=True, max_length=100)
    torchVersion = serializers.CharField(required=False, allow_blank=True, max_length=100)
    command = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    link = serializers.URLField(required=False, allow_blank=True, max_length=500)
    text = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class ReportInputSerializer(serializers.Serializer):
    """The body of POST /runs/{id}/reports/: the web form's fields, camelCase."""

    category = serializers.ChoiceField(choices=ReportCategory.choices)
    description = serializers.CharField(min_length=10, max_length=5000)
    contactEmail = serializers.EmailField(required=False, allow_blank=True, max_length=254)


class ReceivedSerializer(serializers.Serializer):
    reference = serializers.CharField(help_text="Quote it to moderators.")
    state = serializers.CharField(help_text="pending (attestations) or open (reports) until a moderator acts.")
    run = serializers.CharField(help_text="Public id of the run.")


class ApiRootSerializer(serializers.Serializer):
    endpoints = serializers.DictField(child=serializers.URLField())
    schema = serializers.URLField()
    docs = serializers.URLField()


# -- the rerun queue ---------------------------------------------------------------------------


class RerunRequestSerializer(serializers.Serializer):
    """A rerun request as moderators and workers see it (``RerunRequest.objects.for_listing``)."""

    id = serializers.IntegerField()
    state = serializers.CharField(help_text="queued, claimed, done or failed.")
    source = serializers.CharField(source="benchmark.source.slug")
    benchmark = serializers.CharField(source="benchmark.native_id")
    target = serializers.CharField(
        help_text="reference, scoring-baseline, torch-compile(-eager-numerics), run-solution"
    )
    run = serializers.CharField(source="target_run.public_id", allow_null=True, default=None)
    trials = serializers.IntegerField()
    iterations = serializers.IntegerField()
    warmupSeconds = serializers.FloatField(source="warmup_seconds")
    reason = serializers.CharField()
    requestedBy = serializers.CharField(source="requested_by.username")
    requestedAt = serializers.DateTimeField(source="requested_at")
    workerName = serializers.CharField(source="worker_name")
    claimedAt = serializers.DateTimeField(source="claimed_at", allow_null=True)
    leaseExpiresAt = serializers.DateTimeField(source="lease_expires_at", allow_null=True)
    attempts = serializers.IntegerField()
    maxAttempts = serializers.IntegerField(source="max_attempts")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    resultRun = serializers.CharField(source="result_run.public_id", allow_null=True, default=None)
    failureReason = serializers.CharField(source="failure_reason")


class RerunRequestInputSerializer(serializers.Serializer):
    source = serializers.CharField(required=False, default="sol-execbench")
    benchmark = serializers.CharField(required=False, help_text="Native id; optional when `run` is given.")
    target = serializers.ChoiceField(choices=RerunTarget.values)
    run = serializers.CharField(required=False, help_text="Public id of the run whose published solution to rerun.")
    reason = serializers.CharField(required=False)
    trials = serializers.IntegerField(required=False, min_value=1, max_value=10)
    iterations = serializers.IntegerField(required=False, min_value=1, max_value=1000)
    warmupSeconds = serializers.FloatField(required=False, min_value=0, max_value=60)


class RerunClaimInputSerializer(serializers.Serializer):
    worker = serializers.CharField(required=False, max_length=100, help_text="The worker's name (default: token's).")


class RerunWorkSerializer(serializers.Serializer):
    """What a worker needs to run a claimed request without the index's files."""

    id = serializers.IntegerField()
    benchmark = serializers.DictField()
    target = serializers.CharField()
    targetRun = serializers.CharField(allow_null=True)
    expectedRevision = serializers.CharField()
    definition = serializers.DictField(help_text="{folder, files: {definition.json, workload.jsonl}} as published.")
    solution = serializers.DictField(help_text="{kind: builtin, spec} | {kind: baseline, kernel} | {kind: file, file}")
    settings = serializers.DictField()
    attempt = serializers.IntegerField()
    leaseExpiresAt = serializers.DateTimeField()


class RerunFinishInputSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=["done", "failed"])
    run = serializers.CharField(required=False, help_text="Public id of the run the worker recorded.")
    reason = serializers.CharField(required=False, help_text="Why it failed (state failed).")
