"""API tokens in the admin: issue (the secret is shown once), inspect, revoke. Never deleted.
The rerun queue: moderators add requests (``api.reruns.rerun_request_create``) and watch each one's
state, worker and timing; workers move them along through the API. Nothing is edited or deleted."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from api import reruns, services
from api.models import ApiToken, RerunRequest, RerunState


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


class RerunRequestForm(forms.ModelForm):
    class Meta:
        model = RerunRequest
        fields = ["benchmark", "target", "target_run", "trials", "iterations", "warmup_seconds", "reason"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            reruns.rerun_request_check(
                benchmark=data["benchmark"],
                target=data["target"],
                target_run=data.get("target_run"),
                trials=data["trials"],
                iterations=data["iterations"],
                warmup_seconds=data["warmup_seconds"],
            )
        except reruns.RerunRefused as refused:
            field = {"run": "target_run", "warmupSeconds": "warmup_seconds"}.get(refused.field or "", refused.field)
            raise forms.ValidationError({field if field in self.fields else None: refused.message}) from None
        return data


def _run_link(run: Any) -> str:
    if run is None:
        return "—"
    return format_html('<a href="{}">{}</a>', reverse("admin:runs_run_change", args=[run.pk]), run.public_id)


@admin.register(RerunRequest)
class RerunRequestAdmin(admin.ModelAdmin):
    form = RerunRequestForm
    list_display = (
        "id",
        "benchmark_display",
        "target",
        "target_run_display",
        "state",
        "worker_name",
        "attempts",
        "requested_by",
        "requested_at",
        "claimed_at",
        "lease_expires_at",
        "finished_at",
        "result_run_display",
        "failure_reason",
    )
    list_filter = ("state", "target", "worker_name", "requested_at")
    list_select_related = ("benchmark", "target_run", "result_run", "requested_by")
    search_fields = ("benchmark__native_id", "target_run__public_id", "result_run__public_id", "worker_name")
    autocomplete_fields = ("target_run",)
    actions = ["request_again"]
    readonly_fields = (
        "state",
        "requested_by",
        "requested_at",
        "worker_name",
        "claimed_with",
        "claimed_at",
        "lease_expires_at",
        "attempts",
        "max_attempts",
        "finished_at",
        "result_run",
        "failure_reason",
    )

    @admin.display(description="benchmark", ordering="benchmark__native_id")
    def benchmark_display(self, obj: RerunRequest) -> str:
        return obj.benchmark.native_id

    @admin.display(description="run re-measured")
    def target_run_display(self, obj: RerunRequest) -> str:
        return _run_link(obj.target_run)

    @admin.display(description="result run")
    def result_run_display(self, obj: RerunRequest) -> str:
        return _run_link(obj.result_run)

    def get_fields(self, request: HttpRequest, obj: RerunRequest | None = None) -> list[str]:
        if obj is None:
            return list(RerunRequestForm.Meta.fields)
        return [*RerunRequestForm.Meta.fields, *self.readonly_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: RerunRequest | None = None) -> tuple[str, ...]:
        # A request is a record: once queued only the workers move it (through the API).
        return tuple(self.get_fields(request, obj)) if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: RerunRequest, form: Any, change: bool) -> None:
        if change:
            return
        created = reruns.rerun_request_create(
            benchmark=obj.benchmark,
            target=obj.target,
            target_run=obj.target_run,
            requested_by=request.user,
            reason=obj.reason,
            trials=obj.trials,
            iterations=obj.iterations,
            warmup_seconds=obj.warmup_seconds,
        )
        # The admin goes on with ``obj`` (its log entry, its redirect): make it the saved row.
        obj.__dict__.update({k: v for k, v in created.__dict__.items() if not k.startswith("_")})
        obj._state.adding = False

    def has_change_permission(self, request: HttpRequest, obj: RerunRequest | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: RerunRequest | None = None) -> bool:
        return False

    @admin.action(description="Request the selected reruns again", permissions=["add"])
    def request_again(self, request: HttpRequest, queryset: QuerySet[RerunRequest]) -> None:
        count = 0
        for old in queryset.filter(state__in=(RerunState.DONE, RerunState.FAILED)).select_related(
            "benchmark__source", "target_run__implementation", "target_run__benchmark"
        ):
            try:
                reruns.rerun_request_create(
                    benchmark=old.benchmark,
                    target=old.target,
                    target_run=old.target_run,
                    requested_by=request.user,
                    reason=f"again, after request #{old.pk} ({old.state})",
                    trials=old.trials,
                    iterations=old.iterations,
                    warmup_seconds=old.warmup_seconds,
                )
            except reruns.RerunRefused as refused:
                self.message_user(request, f"#{old.pk}: {refused.message}", messages.ERROR)
                continue
            count += 1
        self.message_user(request, f"Queued {count} rerun request(s).", messages.SUCCESS)
