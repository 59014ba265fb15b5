"""The moderation log: read-only and append-only, on its own and inline on each target."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from attestations.models import ModerationEvent


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
