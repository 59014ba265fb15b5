"""Moderation: every curation action, each atomic and each writing exactly one ModerationEvent
through ``event_record`` (actor, action, target, reason, time) with an action from
``ModerationAction``. An action that changes whether a run may be ranked recomputes its
comparison group. Reasons go through one check, ``require_reason``.

Run moderation (quarantine, hide, retract, restore), attestation review, report handling and
quarantine proposals all live here; the admin console and the API call these functions.
Attestations never touch a run's evidence level (DESIGN §3): nothing here writes to it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from attestations.models import (
    Attestation,
    AttestationState,
    IssueReport,
    ModerationEvent,
    ReportCategory,
    ReportState,
)
from kernelindex.pagecache import bump_data_version
from runs import ranking
from runs.models import Run, Visibility


class ModerationAction(StrEnum):
    """The one vocabulary of ``ModerationEvent.action`` (stored as these strings)."""

    ATTESTATION_APPROVE = "attestation_approve"
    ATTESTATION_REJECT = "attestation_reject"
    REPORT_PUBLISH_FLAG = "report_publish_flag"
    REPORT_RESOLVE = "report_resolve"
    REPORT_DISMISS = "report_dismiss"
    RUN_QUARANTINE = "run_quarantine"
    RUN_HIDE = "run_hide"
    RUN_RETRACT = "run_retract"
    RUN_RESTORE = "run_restore"
    QUARANTINE_PROPOSED = "quarantine_proposed"
    QUARANTINE_PROPOSAL_DISMISS = "quarantine_proposal_dismiss"
    API_TOKEN_ISSUED = "api_token.issued"
    API_TOKEN_REVOKED = "api_token.revoked"
    RERUN_REQUESTED = "rerun_request.requested"
    RERUN_CLAIMED = "rerun_request.claimed"
    RERUN_LEASE_EXPIRED = "rerun_request.lease_expired"
    RERUN_DONE = "rerun_request.done"
    RERUN_FAILED = "rerun_request.failed"


# Report categories that count towards proposing a quarantine.
QUARANTINE_CATEGORIES = (ReportCategory.CORRECTNESS, ReportCategory.EXPLOIT)
QUARANTINE_PROPOSED = ModerationAction.QUARANTINE_PROPOSED
# Run-level decisions after which a new proposal needs new reports.
QUARANTINE_DECISIONS = (
    ModerationAction.RUN_QUARANTINE,
    ModerationAction.RUN_RESTORE,
    ModerationAction.QUARANTINE_PROPOSAL_DISMISS,
)


class ModerationError(ValueError):
    """An action that does not apply to the target in its current state."""


def event_record(
    *,
    action: ModerationAction,
    actor: Any,
    reason: str = "",
    run: Run | None = None,
    attestation: Attestation | None = None,
    report: IssueReport | None = None,
    target: tuple[str, str] | None = None,
    actor_label: str = "",
    payload: dict[str, Any] | None = None,
) -> ModerationEvent:
    """Record one curation action. The target is the attestation, else the report, else the run,
    else ``target`` = (type, id) for anything else (an API token)."""
    if attestation is not None:
        target_type, target_id = "attestation", attestation.reference
    elif report is not None:
        target_type, target_id = "report", report.reference
    elif run is not None:
        target_type, target_id = "run", run.public_id
    elif target is not None:
        target_type, target_id = target
    else:
        raise ValueError("a moderation event needs a target")
    signed_in = actor is not None and actor.is_authenticated
    bump_data_version()  # every curation action can change a public page
    return ModerationEvent.objects.create(
        actor=actor if signed_in else None,
        actor_label=actor_label or (actor.get_username() if signed_in else ""),
        action=ModerationAction(action).value,
        target_type=target_type,
        target_id=target_id,
        run=run,
        attestation=attestation,
        report=report,
        reason=reason,
        payload=payload or {},
    )


def require_reason(reason: str | None, what: str, *, public: bool = False, required: bool = True) -> str:
    """The reason of an action, stripped: required unless ``required`` is false, at most 1,000
    characters. ``what`` completes "A reason is required to …"."""
    reason = (reason or "").strip()
    if required and not reason:
        raise ValidationError(
            {"reason": f"A reason is required to {what}." + (" The public sees it." if public else "")}
        )
    if len(reason) > 1000:
        raise ValidationError({"reason": "At most 1000 characters."})
    return reason


# -- attestations ---------------------------------------------------------------------------


@transaction.atomic
def attestation_approve(attestation: Attestation, actor: Any, reason: str = "") -> Attestation:
    """Publish an attestation on its run's page. Ranking and evidence level are unaffected."""
    attestation = Attestation.objects.select_for_update().get(pk=attestation.pk)
    if attestation.state == AttestationState.PUBLISHED:
        raise ModerationError(f"{attestation.reference} is already published.")
    attestation.state = AttestationState.PUBLISHED
    attestation.moderation_reason = require_reason(reason, "approve", required=False)
    attestation.reviewed_at = timezone.now()
    attestation.reviewed_by = actor
    attestation.save(update_fields=["state", "moderation_reason", "reviewed_at", "reviewed_by"])
    event_record(
        action=ModerationAction.ATTESTATION_APPROVE,
        actor=actor,
        reason=attestation.moderation_reason,
        run=attestation.run,
        attestation=attestation,
    )
    return attestation


@transaction.atomic
def attestation_reject(attestation: Attestation, actor: Any, reason: str) -> Attestation:
    """Keep an attestation off the public pages, on record with the reason."""
    reason = require_reason(reason, "reject")
    attestation = Attestation.objects.select_for_update().get(pk=attestation.pk)
    if attestation.state == AttestationState.REJECTED:
        raise ModerationError(f"{attestation.reference} is already rejected.")
    attestation.state = AttestationState.REJECTED
    attestation.moderation_reason = reason
    attestation.reviewed_at = timezone.now()
    attestation.reviewed_by = actor
    attestation.save(update_fields=["state", "moderation_reason", "reviewed_at", "reviewed_by"])
    event_record(
        action=ModerationAction.ATTESTATION_REJECT,
        actor=actor,
        reason=reason,
        run=attestation.run,
        attestation=attestation,
    )
    return attestation


# -- issue reports --------------------------------------------------------------------------


def quarantine_proposal_open(run: Run) -> bool:
    """A quarantine was proposed and no moderator has decided since."""
    stamps = ModerationEvent.objects.filter(run=run).aggregate(
        proposed=Max("created_at", filter=Q(action=QUARANTINE_PROPOSED)),
        decided=Max("created_at", filter=Q(action__in=QUARANTINE_DECISIONS)),
    )
    if stamps["proposed"] is None:
        return False
    return stamps["decided"] is None or stamps["proposed"] > stamps["decided"]


def propose_quarantine_if_due(run: Run) -> ModerationEvent | None:
    """Two different reporters flagging correctness or an exploit since the last decision
    propose a quarantine (once; the moderators decide)."""
    if run.quarantined or quarantine_proposal_open(run):
        return None
    last_decision = (
        ModerationEvent.objects.filter(run=run, action__in=QUARANTINE_DECISIONS)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    reports = IssueReport.objects.filter(run=run, category__in=QUARANTINE_CATEGORIES)
    if last_decision is not None:
        reports = reports.filter(created_at__gt=last_decision)
    reporters = {report.reporter_identity for report in reports.only("reporter_id", "client_key")}
    if len(reporters) < 2:
        return None
    refs = sorted(reports.values_list("reference", flat=True))
    return event_record(
        action=ModerationAction.QUARANTINE_PROPOSED,
        actor=None,
        actor_label="system",
        reason=f"{len(reporters)} different reporters flagged correctness or an exploit: {', '.join(refs)}",
        run=run,
        payload={"reports": refs},
    )


def _handle_report(report: IssueReport, *, state: str, actor: Any) -> IssueReport:
    report.state = state
    report.handled_at = timezone.now()
    report.handled_by = actor
    return report


@transaction.atomic
def report_publish_flag(report: IssueReport, actor: Any, public_summary: str) -> IssueReport:
    """Show a flag with a public summary on the run page and in its ranking."""
    summary = require_reason(public_summary, "publish a flag", public=True)
    report = IssueReport.objects.select_for_update().get(pk=report.pk)
    if report.state == ReportState.FLAGGED and report.public_summary == summary:
        raise ModerationError(f"{report.reference} already has this flag published.")
    _handle_report(report, state=ReportState.FLAGGED, actor=actor)
    report.public_summary = summary
    report.full_clean()
    report.save(update_fields=["state", "public_summary", "handled_at", "handled_by"])
    event_record(
        action=ModerationAction.REPORT_PUBLISH_FLAG, actor=actor, reason=summary, run=report.run, report=report
    )
    return report


@transaction.atomic
def report_resolve(report: IssueReport, actor: Any, reason: str) -> IssueReport:
    """Close a report as acted upon (a published flag is withdrawn from the page)."""
    return _close_report(report=report, actor=actor, reason=reason, state=ReportState.RESOLVED)


@transaction.atomic
def report_dismiss(report: IssueReport, actor: Any, reason: str) -> IssueReport:
    """Close a report as not actionable. It stays on record."""
    return _close_report(report=report, actor=actor, reason=reason, state=ReportState.DISMISSED)


def _close_report(*, report: IssueReport, actor: Any, reason: str, state: str) -> IssueReport:
    reason = require_reason(reason, "close a report")
    report = IssueReport.objects.select_for_update().get(pk=report.pk)
    if report.state == state:
        raise ModerationError(f"{report.reference} is already {report.get_state_display()}.")
    _handle_report(report, state=state, actor=actor)
    report.save(update_fields=["state", "handled_at", "handled_by"])
    action = ModerationAction.REPORT_RESOLVE if state == ReportState.RESOLVED else ModerationAction.REPORT_DISMISS
    event_record(action=action, actor=actor, reason=reason, run=report.run, report=report)
    return report


# -- runs -----------------------------------------------------------------------------------


def _run_change(*, run: Run, actor: Any, reason: str, action: ModerationAction, **changes: Any) -> Run:
    run = Run.objects.select_for_update().get(pk=run.pk)
    before = {name: getattr(run, name) for name in changes}
    if before == changes:
        raise ModerationError(f"Run {run.public_id} is already in that state.")
    for name, value in changes.items():
        setattr(run, name, value)
    run.save(update_fields=[*changes, "updated_at"])
    event_record(
        action=action,
        actor=actor,
        reason=reason,
        run=run,
        payload={"before": before, "after": changes},
    )
    # Hidden, retracted and quarantined runs leave the ranking; restored ones re-enter it.
    ranking.recompute_groups([run.group_id], run_ids=[run.pk])
    return run


@transaction.atomic
def run_quarantine(run: Run, actor: Any, reason: str) -> Run:
    """Take a run out of its ranking while a problem is examined; its page says why."""
    reason = require_reason(reason, "quarantine a run", public=True)
    return _run_change(
        run=run,
        actor=actor,
        reason=reason,
        action=ModerationAction.RUN_QUARANTINE,
        quarantined=True,
        public_reason=reason,
    )


@transaction.atomic
def run_hide(run: Run, actor: Any, reason: str) -> Run:
    """Replace a run's page by a tombstone with the public reason (e.g. published by mistake)."""
    reason = require_reason(reason, "hide a run", public=True)
    return _run_change(
        run=run,
        actor=actor,
        reason=reason,
        action=ModerationAction.RUN_HIDE,
        visibility=Visibility.HIDDEN,
        public_reason=reason,
    )


@transaction.atomic
def run_retract(run: Run, actor: Any, reason: str) -> Run:
    """Withdraw a run (e.g. invalid result); its page stays as a tombstone with the reason."""
    reason = require_reason(reason, "retract a run", public=True)
    return _run_change(
        run=run,
        actor=actor,
        reason=reason,
        action=ModerationAction.RUN_RETRACT,
        visibility=Visibility.RETRACTED,
        public_reason=reason,
    )


@transaction.atomic
def run_restore(run: Run, actor: Any, reason: str) -> Run:
    """Publish a hidden, retracted or quarantined run again; it re-enters its ranking."""
    reason = require_reason(reason, "restore a run")
    return _run_change(
        run=run,
        actor=actor,
        reason=reason,
        action=ModerationAction.RUN_RESTORE,
        visibility=Visibility.PUBLISHED,
        quarantined=False,
        public_reason="",
    )


@transaction.atomic
def quarantine_proposal_dismiss(run: Run, actor: Any, reason: str) -> ModerationEvent:
    """Decide against a proposed quarantine; new reports can propose it again."""
    reason = require_reason(reason, "dismiss a quarantine proposal")
    run = Run.objects.select_for_update().get(pk=run.pk)
    if not quarantine_proposal_open(run):
        raise ModerationError(f"No quarantine is proposed for run {run.public_id}.")
    return event_record(action=ModerationAction.QUARANTINE_PROPOSAL_DISMISS, actor=actor, reason=reason, run=run)
