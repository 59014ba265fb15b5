"""Runs in the moderators' console (registered here, in the moderation app; the admin URLs follow
the model's app label, /admin/runs/run/): read-only documents, moderation actions, no delete.

A run's content comes only from imports (``ingest.engine.import_bundles``); moderators change
its public state through the actions (quarantine, hide, retract, restore), each writing one
ModerationEvent and recomputing the ranking of its group. Nobody deletes runs here, not even
superusers: ``Run.delete`` refuses and a queryset delete would bypass it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from attestations import moderation
from attestations.admin.actions import ObjectActionsMixin, RunModerationActions, reason_action
from attestations.admin.display import stored_link
from attestations.admin.log import RunEventInline
from attestations.selectors import runs_with_moderation
from kernelindex import canonical
from runs.models import Run


class QuarantineProposedFilter(admin.SimpleListFilter):
    title = "quarantine proposed"
    parameter_name = "proposed"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "proposed, awaiting a decision")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(quarantine_proposed=True)
        return queryset


class OpenReportsFilter(admin.SimpleListFilter):
    title = "open reports"
    parameter_name = "reported"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("yes", "with open reports")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(open_reports__gt=0)
        return queryset


@admin.register(Run)
class RunAdmin(ObjectActionsMixin, RunModerationActions, admin.ModelAdmin):
    list_display = (
        "public_id",
        "benchmark_display",
        "submitter",
        "hardware",
        "evidence_level",
        "status",
        "rank",
        "visibility",
        "quarantined",
        "open_reports_display",
        "proposed_display",
        "observed_at",
    )
    list_select_related = ("benchmark", "group")
    list_filter = (
        QuarantineProposedFilter,
        OpenReportsFilter,
        "visibility",
        "quarantined",
        "evidence_level",
        "status",
        "source",
        "is_reference",
        ("data_quality_note", admin.EmptyFieldListFilter),
    )
    search_fields = ("public_id", "submitter", "title", "external_id", "benchmark__native_id", "digest")
    date_hierarchy = "observed_at"
    inlines = [RunEventInline]
    actions = [*RunModerationActions.run_actions, "dismiss_quarantine_proposal"]
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "public_id",
                    "title",
                    "source",
                    "benchmark",
                    "group",
                    "submitter",
                    "external_id",
                    "status",
                    "evidence_level",
                    "is_reference",
                    "rank",
                    "source_rank",
                )
            },
        ),
        ("Public state", {"fields": ("visibility", "quarantined", "public_reason")}),
        (
            "Measurement",
            {"fields": ("primary_statistic", "latency_ns", "sol_score", "avg_speedup", "fast_1_count", "fast_1_total")},
        ),
        (
            "Provenance",
            {"fields": ("observed_at", "published_at", "retrieved_at", "provenance_link", "revision", "updated_at")},
        ),
        (
            "Document",
            {
                "fields": (
                    "digest",
                    "protocol_digest",
                    "environment_digest",
                    "workload_digest",
                    "implementation_digest",
                    "document_pretty",
                )
            },
        ),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [name for fieldset in self.fieldsets for name in fieldset[1]["fields"]]

    @admin.display(description="provenance URL")
    def provenance_link(self, obj: Run) -> str:
        return stored_link(obj.provenance_url)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = runs_with_moderation(super().get_queryset(request))
        if request.resolver_match and request.resolver_match.url_name == "runs_run_changelist":
            # A list row needs none of the (large) canonical document.
            queryset = queryset.defer("document", "identity")
        return queryset

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # runs enter only through imports

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the document is as imported; the public state changes through actions

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # never, for anyone: a run keeps its page as a tombstone

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("runs.change_run")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self.has_moderate_permission(request)

    @admin.display(description="benchmark", ordering="benchmark__native_id")
    def benchmark_display(self, run: Run) -> str:
        return run.benchmark.native_id

    @admin.display(description="hardware", ordering="group__hardware_product")
    def hardware(self, run: Run) -> str:
        return f"{run.group.hardware_product} · {run.group.harness_label}"

    @admin.display(description="open reports", ordering="open_reports")
    def open_reports_display(self, run: Run) -> int:
        return run.open_reports

    @admin.display(description="quarantine proposed", boolean=True, ordering="quarantine_proposed")
    def proposed_display(self, run: Run) -> bool:
        return run.quarantine_proposed

    @admin.display(description="canonical document")
    def document_pretty(self, run: Run) -> str:
        return format_html("<pre>{}</pre>", canonical.pretty(run.doc))

    @admin.action(description="Dismiss the quarantine proposal…", permissions=["moderate"])
    def dismiss_quarantine_proposal(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return reason_action(
            self,
            request,
            queryset,
            title="Dismiss quarantine proposal",
            label="Why the run stays ranked",
            public=False,
            apply=moderation.quarantine_proposal_dismiss,
        )
