"""Community submissions: attestations (reproductions and notes, stored as in-toto-shaped
canonical documents) and issue reports. Each is a record in its own right and writes no
ModerationEvent, except the one system event proposing a quarantine when a second reporter
flags a run's correctness (``moderation.propose_quarantine_if_due``).
"""

from __future__ import annotations

import logging
import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from attestations.models import (
    UNIT_NS,
    Attestation,
    AttestationKind,
    AttestationState,
    IssueReport,
    ReportState,
)
from attestations.moderation import QUARANTINE_CATEGORIES, propose_quarantine_if_due
from kernelindex import canonical
from runs.models import Run

logger = logging.getLogger(__name__)

PREDICATE_BASE = "https://kernelindex.dev/attestation"
PREDICATE_TYPES = {
    AttestationKind.REPRODUCTION: f"{PREDICATE_BASE}/reproduction/v1",
    AttestationKind.NOTE: f"{PREDICATE_BASE}/note/v1",
}


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
        propose_quarantine_if_due(run)
    transaction.on_commit(lambda: _notify_moderators(report))
    return report
