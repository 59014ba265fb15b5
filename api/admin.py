"""API tokens in the admin: issue (the secret is shown once), inspect, revoke. Never deleted."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from api import services
from api.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "user",
        "submitter_name",
        "may_record_reruns",
        "key_prefix",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("may_record_reruns", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("name", "user__username", "submitter_name", "key_prefix")
    list_select_related = ("user",)
    autocomplete_fields = ("user",)
    actions = ["revoke"]

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return ["user", "name", "submitter_name", "may_record_reruns"]
        return [
            "name",
            "user",
            "submitter_name",
            "may_record_reruns",
            "key_prefix",
            "issued_by",
            "created_at",
            "last_used_at",
            "revoked_at",
            "revoked_reason",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return []
        # What a token may do is fixed at issue: issue a new one rather than widening an old one.
        return [f for f in self.get_fields(request, obj) if f != "name"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        token, raw = services.api_token_issue(
            user=obj.user,
            name=obj.name,
            submitter_name=obj.submitter_name,
            may_record_reruns=obj.may_record_reruns,
            issued_by=request.user,
        )
        # The admin goes on with ``obj`` (its log entry, its redirect): make it the saved row.
        obj.__dict__.update({k: v for k, v in token.__dict__.items() if not k.startswith("_")})
        obj._state.adding = False
        messages.warning(
            request,
            f"The token for {token.user.get_username()} is {raw} — copy it now: only its hash is kept, "
            "and it will not be shown again.",
        )

    def has_delete_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        return False

    # Revoking changes the token: a staff user who may only view tokens does not get the action.
    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            services.api_token_revoke(
                token=token, actor=request.user, reason=f"revoked in the admin by {request.user.get_username()}"
            )
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
