"""Attestations and issue reports in the admin: queues that default to the work still to do,
read-only records, and moderation actions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from attestations import moderation
from attestations.admin.actions import ObjectActionsMixin, RunModerationActions, distinct_runs, reason_action
from attestations.admin.display import stored_link
from attestations.admin.log import AttestationEventInline, ReportEventInline
from attestations.forms import AttestationForm
from attestations.models import Attestation, AttestationState, IssueReport, ReportState
from kernelindex import canonical


class DefaultStateFilter(admin.SimpleListFilter):
    """A state filter whose unfiltered default is the queue (pending / open); "all" shows all."""

    title = "state"
    parameter_name = "state"
    default = ""
    choices_list: list[tuple[str, str]] = []

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [*self.choices_list, ("all", "all")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value() or self.default
        if value == "all":
            return queryset
        return queryset.filter(state=value)

    def choices(self, changelist: Any) -> Iterable[dict[str, Any]]:
        value = self.value() or self.default
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }


class AttestationStateFilter(DefaultStateFilter):
    default = AttestationState.PENDING
    choices_list = list(AttestationState.choices)


class ReportStateFilter(DefaultStateFilter):
    default = ReportState.OPEN
    choices_list = list(ReportState.choices)


class ModerationPermissionMixin:
    """Users with the change permission may moderate; the change form itself stays read-only
    (everything shown was submitted by someone and is kept as submitted)."""

    moderate_permission = ""

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(self.moderate_permission)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self.has_moderate_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_active and request.user.is_superuser


def run_link(run: Any) -> str:
    return format_html('<a href="{}">{}</a>', reverse("admin:runs_run_change", args=[run.pk]), run.public_id)


@admin.register(Attestation)
class AttestationAdmin(ObjectActionsMixin, ModerationPermissionMixin, admin.ModelAdmin):
    moderate_permission = "attestations.change_attestation"
    object_actions_query = "?state=all"
    list_display = (
        "reference",
        "run_display",
        "kind",
        "state",
        "author_display",
        "measured",
        "short_text",
        "created_at",
        "reviewed_at",
    )
    list_select_related = ("run",)
    list_filter = (AttestationStateFilter, "kind", "created_at")
    search_fields = ("reference", "digest", "run__public_id", "author_name", "text", "gpu_product", "command")
    date_hierarchy = "created_at"
    inlines = [AttestationEventInline]
    actions = ["approve", "reject"]
    fieldsets = (
        (None, {"fields": ("reference", "run", "kind", "state", "author_name", "created_at")}),
        ("Reproduction", {"fields": AttestationForm.REPRODUCTION_FIELDS}),
        ("Text and link", {"fields": ("text", "link_display")}),
        ("Review", {"fields": ("moderation_reason", "reviewed_at", "reviewed_by")}),
        ("Document", {"fields": ("digest", "document_pretty", "client_key")}),
    )
    readonly_fields = (
        "reference",
        "run",
        "kind",
        "state",
        "author_name",
        "created_at",
        *AttestationForm.REPRODUCTION_FIELDS,
        "text",
        "link_display",
        "moderation_reason",
        "reviewed_at",
        "reviewed_by",
        "digest",
        "document_pretty",
        "client_key",
    )

    @admin.display(description="run", ordering="run__public_id")
    @admin.display(description="link")
    def link_display(self, obj: Attestation) -> str:
        return stored_link(obj.link)

    def run_display(self, obj: Attestation) -> str:
        return run_link(obj.run)

    @admin.display(description="author", ordering="author_name")
    def author_display(self, obj: Attestation) -> str:
        return obj.author_label

    @admin.display(description="measured")
    def measured(self, obj: Attestation) -> str:
        if obj.measured_value is None:
            return "—"
        return f"{obj.measured_value:g} {obj.measured_unit} {obj.measured_statistic}"

    @admin.display(description="text")
    def short_text(self, obj: Attestation) -> str:
        return obj.text if len(obj.text) <= 80 else obj.text[:79] + "…"

    @admin.display(description="canonical document")
    def document_pretty(self, obj: Attestation) -> str:
        return format_html("<pre>{}</pre>", canonical.pretty(obj.doc))

    @admin.action(description="Approve: publish on the run page…", permissions=["moderate"])
    def approve(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return reason_action(
            self,
            request,
            queryset,
            title="Approve",
            label="Note (optional, kept on record)",
            required=False,
            public=False,
            apply=moderation.attestation_approve,
        )

    @admin.action(description="Reject (with reason)…", permissions=["moderate"])
    def reject(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return reason_action(
            self,
            request,
            queryset,
            title="Reject",
            label="Reason for rejecting",
            public=False,
            apply=moderation.attestation_reject,
        )


# -- issue reports ------------------------------------------------------------------------------


@admin.register(IssueReport)
class IssueReportAdmin(ObjectActionsMixin, RunModerationActions, ModerationPermissionMixin, admin.ModelAdmin):
    moderate_permission = "attestations.change_issuereport"
    object_actions_query = "?state=all"
    list_display = (
        "reference",
        "run_display",
        "category",
        "state",
        "short_description",
        "reporter_display",
        "created_at",
        "handled_at",
    )
    list_select_related = ("run", "reporter")
    list_filter = (ReportStateFilter, "category", "created_at")
    search_fields = ("reference", "run__public_id", "description", "contact_email", "public_summary")
    date_hierarchy = "created_at"
    inlines = [ReportEventInline]
    fields = (
        "reference",
        "run",
        "category",
        "state",
        "description",
        "contact_email",
        "reporter",
        "client_key",
        "public_summary",
        "created_at",
        "handled_at",
        "handled_by",
    )
    readonly_fields = fields
    moderation_targets = staticmethod(distinct_runs)
    actions = ["publish_flag", "resolve", "dismiss", *RunModerationActions.run_actions]

    @admin.display(description="run", ordering="run__public_id")
    def run_display(self, obj: IssueReport) -> str:
        return run_link(obj.run)

    @admin.display(description="reporter")
    def reporter_display(self, obj: IssueReport) -> str:
        if obj.reporter:
            return obj.reporter.get_username()
        return f"anonymous ({obj.client_key[:10]})" if obj.client_key else "anonymous"

    @admin.display(description="description")
    def short_description(self, obj: IssueReport) -> str:
        return obj.description if len(obj.description) <= 100 else obj.description[:99] + "…"

    @admin.action(description="Publish a flag with a public summary…", permissions=["moderate"])
    def publish_flag(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return reason_action(
            self,
            request,
            queryset,
            title="Publish flag",
            label="Public summary (shown on the run page and in its ranking)",
            apply=moderation.report_publish_flag,
        )

    @admin.action(description="Resolve (acted upon)…", permissions=["moderate"])
    def resolve(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return reason_action(
            self,
            request,
            queryset,
            title="Resolve",
            label="How it was resolved",
            public=False,
            apply=moderation.report_resolve,
        )

    @admin.action(description="Dismiss (not actionable)…", permissions=["moderate"])
    def dismiss(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return reason_action(
            self,
            request,
            queryset,
            title="Dismiss",
            label="Why it is dismissed",
            public=False,
            apply=moderation.report_dismiss,
        )
