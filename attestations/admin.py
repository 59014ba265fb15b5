"""The moderators' console: queues of pending attestations and open reports, the moderation
log, and bulk actions that go through the services (one ModerationEvent each).

Everything users submitted is read-only here and nothing can be deleted by moderators
(superusers only, for attestations and reports; never for runs or the moderation log).
Changelists load their related rows with ``list_select_related`` and counts with subqueries,
so a page of 100 rows costs the same queries as a page of 10.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from attestations import services
from attestations.forms import AttestationForm
from attestations.models import (
    Attestation,
    AttestationState,
    IssueReport,
    ModerationEvent,
    ReportState,
)
from kernelindex import canonical

# -- the reason step of bulk actions --------------------------------------------------------


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=1000, widget=forms.Textarea(attrs={"rows": 4, "cols": 80}))

    def __init__(self, *args: Any, label: str, required: bool, help_text: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reason"].label = label
        self.fields["reason"].required = required
        self.fields["reason"].help_text = help_text


def reason_action(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    *,
    title: str,
    label: str,
    apply: Callable[[Any, Any, str], Any],
    targets: Callable[[QuerySet], Iterable[Any]] | None = None,
    required: bool = True,
    public: bool = True,
) -> HttpResponse | None:
    """Ask for the reason on an intermediate page, then apply the service to each target.

    ``apply(target, actor, reason)`` calls one service; ``targets`` maps the selected rows to
    what the service acts on (e.g. reports → their distinct runs).
    """
    help_text = (
        "The public sees this on the run page." if public else "Kept on record with the action; not shown publicly."
    )
    if "apply" in request.POST:
        form = ReasonForm(request.POST, label=label, required=required, help_text=help_text)
        if form.is_valid():
            reason = form.cleaned_data["reason"]
            done, skipped = [], []
            for target in targets(queryset) if targets else queryset:
                try:
                    apply(target, request.user, reason)
                    done.append(str(target))
                except (services.ModerationError, ValidationError) as error:
                    message = "; ".join(error.messages) if isinstance(error, ValidationError) else str(error)
                    skipped.append(f"{target}: {message}")
            if done:
                modeladmin.message_user(request, f"{title}: {len(done)} done ({', '.join(done)}).", messages.SUCCESS)
            for line in skipped:
                modeladmin.message_user(request, f"{title}: skipped {line}", messages.WARNING)
            return None
    else:
        form = ReasonForm(label=label, required=required, help_text=help_text)
    opts = modeladmin.model._meta
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "opts": opts,
        "app_label": opts.app_label,
        "form": form,
        "objects": list(targets(queryset) if targets else queryset),
        "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
        "action": request.POST.get("action", ""),
        "select_across": request.POST.get("select_across", "0"),
    }
    return TemplateResponse(request, "admin/attestations/action_reason.html", context)


def _distinct_runs(queryset: QuerySet) -> list[Any]:
    runs: dict[int, Any] = {}
    for item in queryset.select_related("run"):
        runs.setdefault(item.run_id, item.run)
    return list(runs.values())


# -- run actions, shared by the run and report admins ----------------------------------------


def run_actions(targets: Callable[[QuerySet], Iterable[Any]] | None) -> list[Callable]:
    """Quarantine / hide / retract / restore as admin actions over runs (or reports' runs)."""

    def make(name: str, title: str, service: Callable, label: str, public: bool = True) -> Callable:
        def action(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
            return reason_action(
                modeladmin,
                request,
                queryset,
                title=title,
                label=label,
                targets=targets,
                public=public,
                apply=lambda run, actor, reason: service(run=run, actor=actor, reason=reason),
            )

        action.__name__ = name
        return admin.action(
            description=title + ("…" if targets is None else " (their runs)…"), permissions=["moderate"]
        )(action)

    return [
        make("quarantine_runs", "Quarantine", services.run_quarantine, "Public reason for the quarantine"),
        make("hide_runs", "Hide", services.run_hide, "Public reason for hiding"),
        make("retract_runs", "Retract", services.run_retract, "Public reason for the retraction"),
        make("restore_runs", "Restore", services.run_restore, "Reason for restoring", public=False),
    ]


# -- read-only moderation log, inline and on its own ----------------------------------------


class ModerationEventInline(admin.TabularInline):
    model = ModerationEvent
    fields = ("created_at", "action", "actor_display", "target_type", "target_id", "reason")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = False
    ordering = ("-created_at", "-pk")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).select_related("actor")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="actor")
    def actor_display(self, event: ModerationEvent) -> str:
        return event.actor.get_username() if event.actor else event.actor_label or "—"


class RunEventInline(ModerationEventInline):
    fk_name = "run"
    verbose_name_plural = "moderation events (this run, its attestations and reports)"


class AttestationEventInline(ModerationEventInline):
    fk_name = "attestation"


class ReportEventInline(ModerationEventInline):
    fk_name = "report"


@admin.register(ModerationEvent)
class ModerationEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "action", "target", "run_id_display", "actor_display", "short_reason")
    list_select_related = ("actor", "run")
    list_filter = ("action", "target_type", "created_at")
    search_fields = ("target_id", "reason", "actor_label", "run__public_id", "actor__username")
    date_hierarchy = "created_at"
    readonly_fields = (
        "created_at",
        "action",
        "target_type",
        "target_id",
        "run",
        "attestation",
        "report",
        "actor",
        "actor_label",
        "reason",
        "payload",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Append-only: not even superusers remove entries from the log.
        return False

    @admin.display(description="target")
    def target(self, event: ModerationEvent) -> str:
        return f"{event.target_type}:{event.target_id}"

    @admin.display(description="run", ordering="run__public_id")
    def run_id_display(self, event: ModerationEvent) -> str:
        return event.run.public_id if event.run else "—"

    @admin.display(description="actor")
    def actor_display(self, event: ModerationEvent) -> str:
        return event.actor.get_username() if event.actor else event.actor_label or "—"

    @admin.display(description="reason")
    def short_reason(self, event: ModerationEvent) -> str:
        return event.reason if len(event.reason) <= 120 else event.reason[:119] + "…"


# -- queues: filters that default to the work still to do ------------------------------------


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


# -- attestations -----------------------------------------------------------------------------


@admin.register(Attestation)
class AttestationAdmin(ModerationPermissionMixin, admin.ModelAdmin):
    moderate_permission = "attestations.change_attestation"
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
        ("Text and link", {"fields": ("text", "link")}),
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
        "measured_value",
        "measured_unit",
        "measured_statistic",
        "cases_reproduced",
        "cases_matched",
        "gpu_product",
        "driver_version",
        "cuda_version",
        "torch_version",
        "command",
        "text",
        "link",
        "moderation_reason",
        "reviewed_at",
        "reviewed_by",
        "digest",
        "document_pretty",
        "client_key",
    )

    @admin.display(description="run", ordering="run__public_id")
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
            apply=lambda obj, actor, reason: services.attestation_approve(attestation=obj, actor=actor, reason=reason),
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
            apply=lambda obj, actor, reason: services.attestation_reject(attestation=obj, actor=actor, reason=reason),
        )


# -- issue reports ------------------------------------------------------------------------------


@admin.register(IssueReport)
class IssueReportAdmin(ModerationPermissionMixin, admin.ModelAdmin):
    moderate_permission = "attestations.change_issuereport"
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
    actions = ["publish_flag", "resolve", "dismiss", *run_actions(_distinct_runs)]

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
            apply=lambda obj, actor, reason: services.report_publish_flag(
                report=obj, actor=actor, public_summary=reason
            ),
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
            apply=lambda obj, actor, reason: services.report_resolve(report=obj, actor=actor, reason=reason),
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
            apply=lambda obj, actor, reason: services.report_dismiss(report=obj, actor=actor, reason=reason),
        )
