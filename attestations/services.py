"""Writes for attestations, issue reports and moderation.

Every function is keyword-only and atomic. Every moderation action writes exactly one
ModerationEvent (actor, action, target, reason, time) and, when it changes whether a run may
be ranked, recomputes its comparison group. Submissions (``attestation_create``,
``issue_report_create``) are records in their own right and write no event, except the one
system event proposing a quarantine when a second reporter flags a run's correctness.

Attestations never touch a run's evidence level (DESIGN §3): nothing here writes to it.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from attestations.models import (
    UNIT_NS,
    Attestation,
    AttestationKind,
    AttestationState,
    IssueReport,
    ModerationEvent,
    ReportCategory,
    ReportState,
)
from kernelindex import canonical
from runs import ranking
from runs.models import Run, Visibility

logger = logging.getLogger(__name__)

PREDICATE_BASE = "https://kernelindex.dev/attestation"
PREDICATE_TYPES = {
    AttestationKind.REPRODUCTION: f"{PREDICATE_BASE}/reproduction/v1",
    AttestationKind.NOTE: f"{PREDICATE_BASE}/note/v1",
}

# Report categories that count towards proposing a quarantine.
QUARANTINE_CATEGORIES = (ReportCategory.CORRECTNESS, ReportCategory.EXPLOIT)
QUARANTINE_PROPOSED = "quarantine_proposed"
# Run-level decisions after which a new proposal needs new reports.
QUARANTINE_DECISIONS = ("run_quarantine", "run_restore", "quarantine_proposal_dismiss")


class ModerationError(ValueError):
    """An action that does not apply to the target in its current state."""


def _event(
    *,
    action: str,
    actor: Any,
    reason: str = "",
    run: Run | None = None,
    attestation: Attestation | None = None,
    report: IssueReport | None = None,
    actor_label: str = "",
    payload: dict[str, Any] | None = None,
) -> ModerationEvent:
    if attestation is not None:
        target_type, target_id = "attestation", attestation.reference
    elif report is not None:
        target_type, target_id = "report", report.reference
    else:
        target_type, target_id = "run", run.public_id
    return ModerationEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        actor_label=actor_label or (actor.get_username() if actor is not None and actor.is_authenticated else ""),
        action=action,
        target_type=target_type,
        target_id=target_id,
        run=run,
        attestation=attestation,
        report=report,
        reason=reason,
        payload=payload or {},
    )


def _require_reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": f"A reason is required to {what}; the public sees it."})
    if len(reason) > 1000:
        raise ValidationError({"reason": "At most 1000 characters."})
    return reason


# -- attestations ---------------------------------------------------------------------------


def attestation_document(
    *, run: Run, kind: str, predicate: dict[str, Any], reference: str, created_at: str
) -> dict[str, Any]:
    """The canonical Attestation document: an in-toto statement whose subject is the run."""
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": "Attestation",
        "metadata": {"name": f"attestation-{reference}", "createdAt": created_at},
        "spec": {
            "subject": [{"name": f"run/{run.public_id}", "digest": {"sha256": run.digest.removeprefix("sha256:")}}],
            "predicateType": PREDICATE_TYPES[kind],
            "predicate": predicate,
        },
    }


def _predicate(*, kind: str, author_name: str, submitted_at: str, fields: dict[str, Any]) -> dict[str, Any]:
    def present(mapping: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in mapping.items() if value not in (None, "")}

    predicate: dict[str, Any] = {"author": author_name or None, "submittedAt": submitted_at}
    if kind == AttestationKind.REPRODUCTION:
        predicate.update(
            {
                "measurement": {
                    "value": fields["measured_value"],
                    "unit": fields["measured_unit"],
                    "statistic": fields["measured_statistic"],
                },
                "cases": {"reproduced": fields["cases_reproduced"], "matched": fields["cases_matched"]},
                "environment": present(
                    {
                        "gpu": fields["gpu_product"],
                        "driver": fields["driver_version"],
                        "cuda": fields["cuda_version"],
                        "torch": fields["torch_version"],
                    }
                ),
                "command": fields["command"],
            }
        )
        predicate.update(present({"logs": fields["link"], "text": fields["text"]}))
    else:
        predicate.update(present({"text": fields["text"], "link": fields["link"]}))
    return predicate


@transaction.atomic
def attestation_create(
    *,
    run: Run,
    kind: str,
    author: Any = None,
    client_key: str = "",
    text: str = "",
    link: str = "",
    measured_value: float | None = None,
    measured_unit: str = "",
    measured_statistic: str = "",
    cases_reproduced: int | None = None,
    cases_matched: int | None = None,
    gpu_product: str = "",
    driver_version: str = "",
    cuda_version: str = "",
    torch_version: str = "",
    command: str = "",
) -> Attestation:
    """Store a pending attestation as its canonical document. It shows once a moderator approves."""
    if kind not in PREDICATE_TYPES:
        raise ValidationError({"kind": f"Unknown kind {kind!r}."})
    if kind == AttestationKind.REPRODUCTION and measured_unit not in UNIT_NS:
        raise ValidationError({"measured_unit": f"Unit must be one of {', '.join(UNIT_NS)}."})
    signed_in = author is not None and author.is_authenticated
    author_name = author.get_username() if signed_in else ""
    now = timezone.now()
    submitted_at = now.isoformat().replace("+00:00", "Z")
    reference = "A-" + secrets.token_hex(5)
    fields = {
        "measured_value": measured_value,
        "measured_unit": measured_unit,
        "measured_statistic": measured_statistic,
        "cases_reproduced": cases_reproduced,
        "cases_matched": cases_matched,
        "gpu_product": gpu_product,
        "driver_version": driver_version,
        "cuda_version": cuda_version,
        "torch_version": torch_version,
        "command": command,
        "link": link,
        "text": text,
    }
    predicate = _predicate(kind=kind, author_name=author_name, submitted_at=submitted_at, fields=fields)
    document = attestation_document(
        run=run, kind=kind, predicate=predicate, reference=reference, created_at=submitted_at
    )
    try:
        digest = canonical.digest_of(document)
        canonical_text = canonical.dumps_str(document)
    except canonical.CanonicalError as error:
        raise ValidationError(str(error))
    attestation = Attestation(
        run=run,
        kind=kind,
        state=AttestationState.PENDING,
        digest=digest,
        reference=reference,
        document=canonical_text,
        author=author if signed_in else None,
        author_name=author_name,
        client_key=client_key,
        **fields,
    )
    attestation.full_clean()
    try:
        with transaction.atomic():
            attestation.save()
    except IntegrityError:
        raise ValidationError("This attestation was already submitted.")
    return attestation


@transaction.atomic
def attestation_approve(*, attestation: Attestation, actor: Any, reason: str = "") -> Attestation:
    """Publish an attestation on its run's page. Ranking and evidence level are unaffected."""
    attestation = Attestation.objects.select_for_update().get(pk=attestation.pk)
    if attestation.state == AttestationState.PUBLISHED:
        raise ModerationError(f"{attestation.reference} is already published.")
    attestation.state = AttestationState.PUBLISHED
    attestation.moderation_reason = (reason or "").strip()
    attestation.reviewed_at = timezone.now()
    attestation.reviewed_by = actor
    attestation.save(update_fields=["state", "moderation_reason", "reviewed_at", "reviewed_by"])
    _event(
        action="attestation_approve",
        actor=actor,
        reason=attestation.moderation_reason,
        run=attestation.run,
        attestation=attestation,
    )
    return attestation


@transaction.atomic
def attestation_reject(*, attestation: Attestation, actor: Any, reason: str) -> Attestation:
    """Keep an attestation off the public pages, on record with the reason."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "A reason is required to reject."})
    attestation = Attestation.objects.select_for_update().get(pk=attestation.pk)
    if attestation.state == AttestationState.REJECTED:
        raise ModerationError(f"{attestation.reference} is already rejected.")
    attestation.state = AttestationState.REJECTED
    attestation.moderation_reason = reason
    attestation.reviewed_at = timezone.now()
    attestation.reviewed_by = actor
    attestation.save(update_fields=["state", "moderation_reason", "reviewed_at", "reviewed_by"])
    _event(action="attestation_reject", actor=actor, reason=reason, run=attestation.run, attestation=attestation)
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


def _propose_quarantine_if_due(run: Run) -> ModerationEvent | None:
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
    reporters = {
        f"user:{reporter}" if reporter else f"client:{client}"
        for reporter, client in reports.values_list("reporter_id", "client_key")
    }
    if len(reporters) < 2:
        return None
    refs = sorted(reports.values_list("reference", flat=True))
    return _event(
        action=QUARANTINE_PROPOSED,
        actor=None,
        actor_label="system",
        reason=f"{len(reporters)} different reporters flagged correctness or an exploit: {', '.join(refs)}",
        run=run,
        payload={"reports": refs},
    )


def _notify_moderators(report: IssueReport) -> None:
    recipients = list(getattr(settings, "MODERATOR_EMAILS", []))
    if not recipients:
        return
    admin_url = f"{settings.SITE_URL}/admin/attestations/issuereport/{report.pk}/change/"
    body = (
        f"A new report ({report.reference}) on run {report.run.public_id}.\n\n"
        f"Category: {report.get_category_display()}\n"
        f"Run: {settings.SITE_URL}{report.run.get_absolute_url()}\n"
        f"Handle it: {admin_url}\n\n"
        f"{report.description}\n"
    )
    try:
        send_mail(
            f"[KernelIndex] Report {report.reference} on run {report.run.public_id}: {report.get_category_display()}",
            body,
            settings.DEFAULT_FROM_EMAIL,
            recipients,
        )
    except Exception:  # noqa: BLE001 — the report is stored; a mail outage must not lose it.
        logger.exception("Could not email moderators about report %s", report.reference)


@transaction.atomic
def issue_report_create(
    *,
    run: Run,
    category: str,
    description: str,
    contact_email: str = "",
    reporter: Any = None,
    client_key: str = "",
) -> IssueReport:
    """Store a private report, email the moderators once committed, and propose a quarantine
    when a second reporter flags the run's correctness."""
    signed_in = reporter is not None and reporter.is_authenticated
    report = IssueReport(
        run=run,
        reference="R-" + secrets.token_hex(5),
        category=category,
        description=description,
        contact_email=contact_email,
        reporter=reporter if signed_in else None,
        client_key=client_key,
        state=ReportState.OPEN,
    )
    report.full_clean()
    report.save()
    if category in QUARANTINE_CATEGORIES:
        _propose_quarantine_if_due(run)
    transaction.on_commit(lambda: _notify_moderators(report))
    return report


def _handle_report(report: IssueReport, *, state: str, actor: Any) -> IssueReport:
    report.state = state
    report.handled_at = timezone.now()
    report.handled_by = actor
    return report


@transaction.atomic
def report_publish_flag(*, report: IssueReport, actor: Any, public_summary: str) -> IssueReport:
    """Show a flag with a public summary on the run page and in its ranking."""
    summary = _require_reason(public_summary, "publish a flag")
    report = IssueReport.objects.select_for_update().get(pk=report.pk)
    if report.state == ReportState.FLAGGED and report.public_summary == summary:
        raise ModerationError(f"{report.reference} already has this flag published.")
    _handle_report(report, state=ReportState.FLAGGED, actor=actor)
    report.public_summary = summary
    report.full_clean()
    report.save(update_fields=["state", "public_summary", "handled_at", "handled_by"])
    _event(action="report_publish_flag", actor=actor, reason=summary, run=report.run, report=report)
    return report


@transaction.atomic
def report_resolve(*, report: IssueReport, actor: Any, reason: str) -> IssueReport:
    """Close a report as acted upon (a published flag is withdrawn from the page)."""
    return _close_report(report=report, actor=actor, reason=reason, state=ReportState.RESOLVED)


@transaction.atomic
def report_dismiss(*, report: IssueReport, actor: Any, reason: str) -> IssueReport:
    """Close a report as not actionable. It stays on record."""
    return _close_report(report=report, actor=actor, reason=reason, state=ReportState.DISMISSED)


def _close_report(*, report: IssueReport, actor: Any, reason: str, state: str) -> IssueReport:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "A reason is required."})
    report = IssueReport.objects.select_for_update().get(pk=report.pk)
    if report.state == state:
        raise ModerationError(f"{report.reference} is already {report.get_state_display()}.")
    _handle_report(report, state=state, actor=actor)
    report.save(update_fields=["state", "handled_at", "handled_by"])
    action = "report_resolve" if state == ReportState.RESOLVED else "report_dismiss"
    _event(action=action, actor=actor, reason=reason, run=report.run, report=report)
    return report


# -- runs -----------------------------------------------------------------------------------


def _run_change(*, run: Run, actor: Any, reason: str, action: str, **changes: Any) -> Run:
    run = Run.objects.select_for_update().get(pk=run.pk)
    before = {name: getattr(run, name) for name in changes}
    if before == changes:
        raise ModerationError(f"Run {run.public_id} is already in that state.")
    for name, value in changes.items():
        setattr(run, name, value)
    run.save(update_fields=[*changes, "updated_at"])
    _event(
        action=action,
        actor=actor,
        reason=reason,
        run=run,
        payload={"before": before, "after": changes},
    )
    # Hidden, retracted and quarantined runs leave the ranking; restored ones re-enter it.
    ranking.recompute_groups([run.group_id])
    return run


@transaction.atomic
def run_quarantine(*, run: Run, actor: Any, reason: str) -> Run:
    """Take a run out of its ranking while a problem is examined; its page says why."""
    reason = _require_reason(reason, "quarantine a run")
    return _run_change(
        run=run, actor=actor, reason=reason, action="run_quarantine", quarantined=True, public_reason=reason
    )


@transaction.atomic
def run_hide(*, run: Run, actor: Any, reason: str) -> Run:
    """Replace a run's page by a tombstone with the public reason (e.g. published by mistake)."""
    reason = _require_reason(reason, "hide a run")
    return _run_change(
        run=run, actor=actor, reason=reason, action="run_hide", visibility=Visibility.HIDDEN, public_reason=reason
    )


@transaction.atomic
def run_retract(*, run: Run, actor: Any, reason: str) -> Run:
    """Withdraw a run (e.g. invalid result); its page stays as a tombstone with the reason."""
    reason = _require_reason(reason, "retract a run")
    return _run_change(
        run=run, actor=actor, reason=reason, action="run_retract", visibility=Visibility.RETRACTED, public_reason=reason
    )


@transaction.atomic
def run_restore(*, run: Run, actor: Any, reason: str) -> Run:
    """Publish a hidden, retracted or quarantined run again; it re-enters its ranking."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "A reason is required to restore a run."})
    return _run_change(
        run=run,
        actor=actor,
        reason=reason,
        action="run_restore",
        visibility=Visibility.PUBLISHED,
        quarantined=False,
        public_reason="",
    )


@transaction.atomic
def quarantine_proposal_dismiss(*, run: Run, actor: Any, reason: str) -> ModerationEvent:
    """Decide against a proposed quarantine; new reports can propose it again."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": "A reason is required."})
    run = Run.objects.select_for_update().get(pk=run.pk)
    if not quarantine_proposal_open(run):
        raise ModerationError(f"No quarantine is proposed for run {run.public_id}.")
    return _event(action="quarantine_proposal_dismiss", actor=actor, reason=reason, run=run)
