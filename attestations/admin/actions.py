"""Admin actions that ask for a reason on an intermediate page, then call one moderation function
per target (``attestations.moderation``), each writing its ModerationEvent."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from attestations import moderation


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
    """Ask for the reason on an intermediate page, then call ``apply(target, actor, reason)`` (a
    function of ``attestations.moderation``) for each target; ``targets`` maps the selected rows
    to what it acts on (e.g. reports → their distinct runs)."""
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
                except (moderation.ModerationError, ValidationError) as error:
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


def distinct_runs(queryset: QuerySet) -> list[Any]:
    runs: dict[int, Any] = {}
    for item in queryset.select_related("run"):
        runs.setdefault(item.run_id, item.run)
    return list(runs.values())


class RunModerationActions:
    """Quarantine / hide / retract / restore as admin actions, for the run admin (the selected
    runs) and the report admin (the reports' distinct runs: ``moderation_targets``)."""

    moderation_targets: Callable[[QuerySet], Iterable[Any]] | None = None
    run_actions = ["quarantine_runs", "hide_runs", "retract_runs", "restore_runs"]

    def _run_action(
        self, request: HttpRequest, queryset: QuerySet, title: str, label: str, apply: Callable, public: bool = True
    ) -> HttpResponse | None:
        return reason_action(
            self,  # type: ignore[arg-type]
            request,
            queryset,
            title=title,
            label=label,
            targets=type(self).moderation_targets,
            public=public,
            apply=apply,
        )

    @admin.action(description="Quarantine…", permissions=["moderate"])
    def quarantine_runs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run_action(
            request, queryset, "Quarantine", "Public reason for the quarantine", moderation.run_quarantine
        )

    @admin.action(description="Hide…", permissions=["moderate"])
    def hide_runs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run_action(request, queryset, "Hide", "Public reason for hiding", moderation.run_hide)

    @admin.action(description="Retract…", permissions=["moderate"])
    def retract_runs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run_action(
            request, queryset, "Retract", "Public reason for the retraction", moderation.run_retract
        )

    @admin.action(description="Restore…", permissions=["moderate"])
    def restore_runs(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        return self._run_action(
            request, queryset, "Restore", "Reason for restoring", moderation.run_restore, public=False
        )


class ObjectActionsMixin:
    """The change page of one object offers its admin actions as buttons. Each button posts
    that one object to the changelist as the bulk action would, so it reaches the same reason
    step and the same moderation function. Nothing users submitted is bulk-deleted: the
    "delete selected" action is never offered here (superusers keep the single-object delete
    page, which shows what goes and asks to confirm)."""

    # Appended to the changelist URL the buttons post to: a changelist whose default filter
    # (the pending / open queue) would leave this object out must show everything.
    object_actions_query = ""

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)  # type: ignore[misc]
        actions.pop("delete_selected", None)
        return actions

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        buttons = [(name, description) for name, (_, _, description) in self.get_actions(request).items()]
        context = {
            **(extra_context or {}),
            "object_actions": buttons,
            "object_pk": object_id,
            "object_actions_query": self.object_actions_query,
        }
        return super().change_view(request, object_id, form_url, extra_context=context)  # type: ignore[misc]
