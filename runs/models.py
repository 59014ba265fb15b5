"""The entities of DESIGN §1.

Every record that has a canonical document (protocol, environment, workload, implementation,
run) keeps the RFC 8785 bytes it was imported with in ``document`` (a text column, never
``jsonb``: PostgreSQL would rewrite numbers) and is identified by the digest of those bytes.
The relational columns next to it are derived from the document for querying and ranking.

Runs are never deleted: ``Run.delete`` refuses, revisions point at their run with PROTECT,
and a hidden or retracted run keeps its page as a tombstone.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import orjson
from django.conf import settings
from django.db import models
from django.db.models import Q

from kernelindex import canonical, links
from kernelindex.loading import LoadedQuickly
from runs.ordering import newest_first_index


class DocumentQuerySet(models.QuerySet):
    def public(self) -> DocumentQuerySet:
        """Documents at least one visible run uses: one used only by hidden or retracted runs is
        not listed (its project, submitter, revision, GPU stay as hidden as the run). One
        ``EXISTS`` in the same query, so a list costs what it cost before."""
        runs = Run.objects.visible().filter(**{self.model._meta.model_name: models.OuterRef("pk")})
        return self.filter(models.Exists(runs))


class DocumentMixin(LoadedQuickly, models.Model):
    """A record stored as its canonical manifest document."""

    digest = models.CharField(max_length=71, unique=True)
    name = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=300, blank=True)
    document = models.TextField(help_text="RFC 8785 canonical bytes of the whole document.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = DocumentQuerySet.as_manager()

    class Meta:
        abstract = True

    @cached_property
    def doc(self) -> dict[str, Any]:
        """The parsed document, read-only (the manifest shares it): orjson, a third of json's time."""
        return orjson.loads(self.document)

    @property
    def spec(self) -> dict[str, Any]:
        return self.doc.get("spec", {})

    def __str__(self) -> str:
        return self.title or self.name or canonical.short(self.digest)


# Figures of published runs that runs.counts keeps at every write (pages never count per request).
_KEPT = "Of the published runs; kept at every write by runs.counts."


class Source(LoadedQuickly, models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    url = models.URLField(blank=True)
    description = models.TextField(blank=True)
    published_runs = models.PositiveIntegerField(
        default=0, editable=False, help_text="Published runs; kept at every write by runs.counts."
    )
    benchmark_count = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)
    submitter_count = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)
    gpu_count = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)
    last_observed_at = models.DateTimeField(null=True, blank=True, editable=False, help_text=_KEPT)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return self.path_of(self.slug)

    @staticmethod
    def path_of(slug: str, prefix: str | None = None) -> str:
        """The page of the source ``slug``, without the object (a list's ``values()`` row)."""
        return links.page_path("sources", slug, prefix=prefix)


class BenchmarkQuerySet(models.QuerySet):
    def for_listing(self) -> BenchmarkQuerySet:
        return self.select_related("source")


class Benchmark(LoadedQuickly, models.Model):
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="benchmarks")
    native_id = models.CharField(max_length=200, help_text="The source's own id of the problem.")
    numeric_id = models.IntegerField(null=True, blank=True, help_text="e.g. SOL-ExecBench kernel 62")
    title = models.CharField(max_length=300)
    collection = models.CharField(max_length=100, blank=True)
    hf_model_id = models.CharField(max_length=200, blank=True)
    tags = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True)
    reference_code = models.TextField(blank=True)
    definition = models.TextField(blank=True, help_text="The source's definition document, as published.")
    workload = models.ForeignKey(
        "Workload",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The source's current workload for this benchmark.",
    )
    published_runs = models.PositiveIntegerField(
        default=0, editable=False, help_text="Published runs; kept at every write by runs.counts."
    )
    submitter_count = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)
    last_observed_at = models.DateTimeField(null=True, blank=True, editable=False, help_text=_KEPT)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BenchmarkQuerySet.as_manager()

    class Meta:
        ordering = ["source__name", "native_id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "native_id"], name="benchmark_unique_native_id"),
        ]
        indexes = [
            # The API's groups list, by benchmark: walking benchmarks in native-id order lets a
            # page sort only each benchmark's few groups and stop after one page, instead of
            # joining and sorting every group (9,354 in the shipped data: 10 ms a page).
            models.Index(fields=["native_id"], name="benchmark_native_id"),
        ]

    def __str__(self) -> str:
        return self.title or self.native_id

    def get_absolute_url(self) -> str:
        return self.path_of(self.source.slug, self.native_id)

    @staticmethod
    def path_of(source_slug: str, native_id: str, prefix: str | None = None) -> str:
        """The page of the benchmark ``native_id`` of the source ``source_slug``. A native id
        stored before ids were checked may not be a safe path (``../..``): such a benchmark links
        to its source rather than to wherever the dots would lead."""
        if links.native_id_problem(native_id) is not None:
            return Source.path_of(source_slug, prefix)
        return links.page_path("benchmarks", source_slug, native_id, prefix=prefix)


class Workload(DocumentMixin):
    benchmark = models.ForeignKey(Benchmark, null=True, blank=True, on_delete=models.PROTECT, related_name="workloads")
    case_count = models.PositiveIntegerField(default=0)

    @property
    def cases(self) -> list[dict[str, Any]]:
        return self.spec.get("cases", [])


class Protocol(DocumentMixin):
    harness_name = models.CharField(max_length=200)
    harness_version = models.CharField(max_length=100, blank=True)
    family = models.CharField(max_length=100)
    timer = models.CharField(max_length=100, blank=True)
    primary_statistic = models.CharField(max_length=50, blank=True)

    @property
    def harness_label(self) -> str:
        return f"{self.harness_name} {self.harness_version}".strip()


class Environment(DocumentMixin):
    vendor = models.CharField(max_length=100, blank=True)
    product = models.CharField(max_length=200, help_text="Normalised, e.g. 'NVIDIA B200'.")
    architecture = models.CharField(max_length=50, blank=True)
    published_runs = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)

    def get_absolute_url(self) -> str:
        return links.page_path("environments", self.digest)


class ProjectQuerySet(models.QuerySet):
    def public(self) -> ProjectQuerySet:
        """Projects with at least one visible run (see ``DocumentQuerySet.public``)."""
        return self.filter(models.Exists(Run.objects.visible().filter(implementation__project=models.OuterRef("pk"))))


class Project(LoadedQuickly, models.Model):
    slug = models.SlugField(max_length=200, unique=True)
    name = models.CharField(max_length=300, help_text="Kept whole: names contain '|', '@', spaces.")
    published_runs = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)
    benchmark_count = models.PositiveIntegerField(default=0, editable=False, help_text=_KEPT)
    revision_count = models.PositiveIntegerField(default=0, editable=False, help_text="Implementations (revisions).")
    last_observed_at = models.DateTimeField(null=True, blank=True, editable=False, help_text=_KEPT)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return self.path_of(self.slug)

    @staticmethod
    def path_of(slug: str, prefix: str | None = None) -> str:
        """The page of the project ``slug``, without the object (a list's ``values()`` row)."""
        return links.page_path("projects", slug, prefix=prefix)


class Implementation(DocumentMixin):
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.PROTECT, related_name="implementations"
    )
    submitter = models.CharField(max_length=300, blank=True)
    revision = models.CharField(max_length=300, blank=True)


class ComparisonGroup(LoadedQuickly, models.Model):
    """Runs that share a comparison key (DESIGN §4) and are ranked together."""

    DIRECTION_CHOICES = [("asc", "ascending"), ("desc", "descending")]
    BEST_PER_CHOICES = [
        ("submitter", "best run per submitter"),
        ("implementation", "best run per implementation"),
        ("run", "every run"),
    ]

    key = models.CharField(max_length=71, unique=True)
    key_document = models.TextField(help_text="Canonical JSON the key is the sha256 of.")
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="groups")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="groups")
    family = models.CharField(max_length=100)
    hardware_product = models.CharField(max_length=200)
    harness_name = models.CharField(max_length=200)
    harness_version = models.CharField(max_length=100, blank=True)
    ranking_metric = models.CharField(max_length=50)
    ranking_direction = models.CharField(max_length=4, choices=DIRECTION_CHOICES)
    best_per = models.CharField(max_length=20, choices=BEST_PER_CHOICES)
    ranked_count = models.PositiveIntegerField(
        default=0, help_text="Runs holding a rank in the group; written by runs.ranking with the ranks."
    )
    published_runs = models.PositiveIntegerField(
        default=0, editable=False, help_text="Published runs; kept at every write by runs.counts."
    )
    reference_runs = models.PositiveIntegerField(
        default=0, editable=False, help_text="Published reference rows; kept at every write by runs.counts."
    )
    last_observed_at = models.DateTimeField(null=True, blank=True, editable=False, help_text=_KEPT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark__native_id", "hardware_product", "harness_version"]
        indexes = [
            # A benchmark's largest group (the benchmarks index shows its #1): one index entry per
            # benchmark, not a sort of all its groups for each of them.
            models.Index(fields=["benchmark", "-ranked_count"], name="group_benchmark_largest"),
            # A GPU's groups (its page, the GPU filters' options).
            models.Index(fields=["hardware_product"], name="group_hardware_product"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(ranking_direction__in=["asc", "desc"]), name="group_direction_valid"),
            models.CheckConstraint(
                condition=Q(best_per__in=["submitter", "implementation", "run"]),
                name="group_best_per_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark} · {self.hardware_product} · {self.harness_label}"

    @property
    def harness_label(self) -> str:
        return f"{self.harness_name} {self.harness_version}".strip()

    def get_absolute_url(self) -> str:
        return links.page_path("groups", self.key)


class EvidenceLevel(models.TextChoices):
    SOURCE_REPORTED = "source_reported", "source reported"
    SUBMITTER_REPORTED = "submitter_reported", "submitter reported"
    KERNELINDEX_RERUN = "kernelindex_rerun", "KernelIndex rerun"


class Visibility(models.TextChoices):
    PUBLISHED = "published", "published"
    HIDDEN = "hidden", "hidden"
    RETRACTED = "retracted", "retracted"


class RunStatus(models.TextChoices):
    PASSED = "passed", "passed"
    FAILED = "failed", "failed"
    ERROR = "error", "error"
    UNKNOWN = "unknown", "unknown"


# The one eligibility rule of DESIGN §4: ranking, pages and the API all use this Q.
ELIGIBLE = Q(status=RunStatus.PASSED, visibility=Visibility.PUBLISHED, quarantined=False, is_reference=False)


# A source's own page's columns (its description and counts).
_SOURCE_OWN = (
    "url",
    "description",
    "published_runs",
    "benchmark_count",
    "submitter_count",
    "gpu_count",
    "last_observed_at",
)

# What for_listing leaves in the database (the run page asks for everything: runs.selectors.run_get).
# A list row needs none of the run's own document (the API's items read two small objects of it,
# kept in columns of their own: runs.summaries): decoding 50 of them was a fifth of an API page.
LISTING_DEFERRED = (
    "document",
    "identity",  # the source's identity as canonical JSON, a few hundred bytes a row
    "labels",
    "benchmark__definition",
    "benchmark__reference_code",
    "benchmark__description",
    "group__key_document",
    "protocol__document",
    "environment__document",
    "implementation__document",
    # What only the run's own page (runs.selectors.run_get) and the objects' pages show: counts,
    # dates, long texts. A list read 126 columns a row, 18 of them dates SQLite parses one by one.
    *("status_detail", "provenance_url", "retrieved_at", "data_quality_note", "public_reason", "updated_at"),
    *(f"{source}__{name}" for source in ("source", "benchmark__source") for name in _SOURCE_OWN),
    *("benchmark__tags", "benchmark__hf_model_id", "benchmark__published_runs", "benchmark__submitter_count"),
    *("benchmark__last_observed_at", "benchmark__created_at", "benchmark__updated_at"),
    *("group__published_runs", "group__last_observed_at", "group__created_at"),
    *("protocol__created_at", "environment__created_at", "environment__published_runs", "implementation__created_at"),
    *(f"implementation__project__{name}" for name in ("published_runs", "benchmark_count", "revision_count")),
    "implementation__project__last_observed_at",
)


class RunQuerySet(models.QuerySet):
    def visible(self) -> RunQuerySet:
        """Runs whose pages show their content (not tombstones)."""
        return self.filter(visibility=Visibility.PUBLISHED)

    def eligible(self) -> RunQuerySet:
        return self.filter(ELIGIBLE)

    def with_eligibility(self) -> RunQuerySet:
        """Annotate ``eligible`` (bool) so a page can grey out ineligible rows."""
        return self.annotate(eligible=models.ExpressionWrapper(ELIGIBLE, output_field=models.BooleanField()))

    def for_listing(self) -> RunQuerySet:
        # One JOIN for everything a list row shows; avoids a query per row. The related rows'
        # documents and long texts stay in the database (~10 kB a row a list never shows).
        return self.select_related(
            "source",
            "benchmark",
            "benchmark__source",
            "group",
            "environment",
            "implementation",
            "implementation__project",
            "protocol",
        ).defer(*LISTING_DEFERRED)


class Run(LoadedQuickly, models.Model):
    public_id = models.CharField(max_length=64, unique=True)
    identity = models.TextField(unique=True, help_text="Canonical JSON of the source's own identity of the run.")
    # Not indexed: nothing looks a run up by its digest (the admin's search is a substring match).
    digest = models.CharField(max_length=71)
    document = models.TextField(help_text="RFC 8785 canonical bytes of the BenchmarkRun document.")
    name = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=500, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    # runs.summaries: spec.timing and spec.sourceNative.metrics of the document, as JSON text.
    timing_json = models.TextField(null=True, blank=True, editable=False)
    metrics_json = models.TextField(null=True, blank=True, editable=False)

    # Its group's source and benchmark, kept for the indexes below (neither has one of its own:
    # they lead with it). No constraints: the group's vouches for them (runs/migrations/0015).
    source = models.ForeignKey(
        Source, on_delete=models.PROTECT, related_name="runs", db_index=False, db_constraint=False
    )
    benchmark = models.ForeignKey(
        Benchmark, on_delete=models.PROTECT, related_name="runs", db_index=False, db_constraint=False
    )
    group = models.ForeignKey(ComparisonGroup, on_delete=models.PROTECT, related_name="runs", db_index=False)
    protocol = models.ForeignKey(Protocol, on_delete=models.PROTECT, related_name="runs")
    environment = models.ForeignKey(Environment, on_delete=models.PROTECT, related_name="runs")
    workload = models.ForeignKey(Workload, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    implementation = models.ForeignKey(
        Implementation, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    # Declared digests, kept as the run states them even when the document is not in the index.
    protocol_digest = models.CharField(max_length=71)
    environment_digest = models.CharField(max_length=71)
    workload_digest = models.CharField(max_length=71, blank=True)
    implementation_digest = models.CharField(max_length=71, blank=True)

    external_id = models.CharField(max_length=300)
    submitter = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.PASSED)
    status_detail = models.CharField(max_length=200, blank=True)
    evidence_level = models.CharField(
        max_length=30, choices=EvidenceLevel.choices, default=EvidenceLevel.SOURCE_REPORTED
    )
    is_reference = models.BooleanField(
        default=False, help_text="A source's reference row (SOL Bound, Scoring Baseline…): unranked."
    )

    primary_statistic = models.CharField(max_length=50, blank=True)
    latency_ns = models.FloatField(null=True, blank=True, help_text="Primary statistic, ns.")
    sol_score = models.FloatField(null=True, blank=True)
    avg_speedup = models.FloatField(null=True, blank=True)
    fast_1_count = models.IntegerField(null=True, blank=True)
    fast_1_total = models.IntegerField(null=True, blank=True)
    source_rank = models.IntegerField(null=True, blank=True, help_text="Rank the source published.")
    rank = models.IntegerField(null=True, blank=True, help_text="Computed by runs.ranking.")

    observed_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(help_text="When KernelIndex first published the run.")
    provenance_url = models.URLField(max_length=1000, blank=True)
    retrieved_at = models.DateTimeField(null=True, blank=True)
    data_quality_note = models.TextField(
        blank=True,
        help_text="Set by the importer when a row breaks one of its source's identities beyond the published "
        "precision: imported as published, with this note.",
    )

    visibility = models.CharField(max_length=20, choices=Visibility.choices, default=Visibility.PUBLISHED)
    quarantined = models.BooleanField(default=False)
    public_reason = models.TextField(blank=True, help_text="Shown on the page when hidden, retracted or quarantined.")
    revision = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-observed_at", "public_id"]
        # One index per list the pages and the API offer, in the list's own order, so a page of any
        # reads a few index entries however many runs there are (tests/runs/test_indexes.py).
        indexes = [
            models.Index(fields=["group", "rank"]),  # leaders, a benchmark's top runs
            # A source's runs, and its distinct submitters read one per index descent (runs.counts).
            models.Index(fields=["source", "submitter"], name="run_source_submitter"),
            # (a group's ranking page in its rule's order: runs/migrations/0007, PostgreSQL only)
            # newest_first(): latest runs (home, sources), /api/v1/runs/ in its default order
            # (-observedAt); filtered by benchmark; one submitter's runs.
            newest_first_index("run_newest_first"),
            newest_first_index("run_api_benchmark_observed", "benchmark"),
            newest_first_index("run_submitter_observed", "submitter"),
            # A source's and an environment's latest runs (their pages): without these a small source
            # walked the whole newest-first index, an environment's page the runs table (1M runs).
            newest_first_index("run_source_observed", "source"),
            newest_first_index("run_environment_observed", "environment"),
            # The rare values of a filter, whose runs a newest-first walk meets late or never: the
            # failed and unranked runs, the reruns (0.4-1 s at 1M runs). Only those runs are in
            # them, so an import of passed, ranked, source-reported runs adds nothing to them.
            newest_first_index("run_rare_status_observed", "status", only=~Q(status=RunStatus.PASSED)),
            newest_first_index(
                "run_rare_evidence_observed", "evidence_level", only=~Q(evidence_level=EvidenceLevel.SOURCE_REPORTED)
            ),
            newest_first_index("run_unranked_observed", only=Q(rank__isnull=True)),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(evidence_level__in=EvidenceLevel.values), name="run_evidence_level_valid"
            ),
            models.CheckConstraint(condition=Q(visibility__in=Visibility.values), name="run_visibility_valid"),
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="run_status_valid"),
            models.CheckConstraint(condition=Q(rank__isnull=True) | Q(rank__gte=1), name="run_rank_positive"),
            models.CheckConstraint(
                condition=Q(fast_1_count__isnull=True)
                | Q(fast_1_total__isnull=True)
                | Q(fast_1_count__lte=models.F("fast_1_total")),
                name="run_fast_1_count_le_total",
            ),
            models.CheckConstraint(
                condition=Q(rank__isnull=True) | Q(is_reference=False), name="run_reference_unranked"
            ),
        ]

    def __str__(self) -> str:
        return f"Run {self.public_id}"

    def get_absolute_url(self) -> str:
        return self.path_of(self.public_id)

    @staticmethod
    def path_of(public_id: str, prefix: str | None = None) -> str:
        """The page of the run ``public_id``, without the object (a list's ``values()`` row);
        ``prefix``: the script prefix, when the caller has read it (``links.page_path``)."""
        return links.page_path("runs", public_id, prefix=prefix)

    # The run page links its twin, comparison and citation several times each; reverse() was
    # about 0.1 ms a link (tests/runs/test_paths.py pins these to reverse()).
    def get_json_url(self) -> str:
        return self.get_absolute_url()[:-1] + ".json"

    def get_compare_url(self) -> str:
        return links.page_path("runs", self.public_id, "compare")

    def get_cite_url(self) -> str:
        return links.page_path("runs", self.public_id, "cite")

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise models.ProtectedError(
            "Runs are never deleted; hide or retract them so their page stays a tombstone.", {self}
        )

    @cached_property
    def doc(self) -> dict[str, Any]:
        """The parsed document, read-only, as Document.doc."""
        return orjson.loads(self.document)

    @property
    def spec(self) -> dict[str, Any]:
        return self.doc.get("spec", {})

    @property
    def shown_workload(self) -> Workload | None:
        """The workload the run declares when the index has it, else its benchmark's current one
        (the source's workload for that benchmark); the declared digest is shown either way."""
        return self.workload or self.benchmark.workload


class RunRevision(LoadedQuickly, models.Model):
    """Every version a run has had: who changed it, what, and why. Append-only."""

    # Indexed by the unique (run, number) constraint, which starts with the run.
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="revisions", db_index=False)
    number = models.PositiveIntegerField()
    digest = models.CharField(max_length=71)
    document = models.TextField()
    previous_digest = models.CharField(max_length=71, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=300, help_text="e.g. 'import: leaderboards/kernel-10…'")
    reason = models.TextField()
    changes = models.JSONField(default=dict, blank=True, help_text="Fields that changed: {field: [old, new]}.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="run_revision_unique_number")]

    def __str__(self) -> str:
        return f"{self.run} revision {self.number}"
