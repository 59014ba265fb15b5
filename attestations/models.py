"""Community attestations, issue reports, and the append-only moderation log.

Nothing a user submitted is ever deleted: rejected attestations and closed reports stay on
record with their state; every curation action writes one ModerationEvent.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from runs.models import Run


class AttestationKind(models.TextChoices):
    REPRODUCTION = "reproduction", "reproduction"
    NOTE = "note", "note"


# Units a reproduction may report its measurement in, and their size in nanoseconds.
UNIT_NS = {"ns": 1.0, "µs": 1e3, "ms": 1e6}


class AttestationState(models.TextChoices):
    PENDING = "pending", "pending review"
    PUBLISHED = "published", "published"
    REJECTED = "rejected", "rejected"


class AttestationQuerySet(models.QuerySet):
    def published(self) -> AttestationQuerySet:
        return self.filter(state=AttestationState.PUBLISHED)

    def pending(self) -> AttestationQuerySet:
        return self.filter(state=AttestationState.PENDING)


class Attestation(models.Model):
    """An in-toto-shaped statement about a run: subject = the run's digest, typed predicate."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="attestations")
    kind = models.CharField(max_length=20, choices=AttestationKind.choices)
    state = models.CharField(max_length=20, choices=AttestationState.choices, default=AttestationState.PENDING)
    digest = models.CharField(max_length=71, unique=True)
    reference = models.CharField(
        max_length=32, unique=True, default="", help_text="Shown to the submitter on the confirmation page."
    )
    document = models.TextField(help_text="RFC 8785 canonical bytes of the Attestation document.")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="attestations",
    )
    author_name = models.CharField(max_length=150, blank=True)
    # Reproduction fields, copied from the document for display and querying.
    measured_value = models.FloatField(null=True, blank=True)
    measured_unit = models.CharField(max_length=10, blank=True)
    measured_statistic = models.CharField(max_length=20, blank=True)
    cases_reproduced = models.PositiveIntegerField(null=True, blank=True)
    cases_matched = models.PositiveIntegerField(null=True, blank=True)
    gpu_product = models.CharField(max_length=200, blank=True)
    driver_version = models.CharField(max_length=100, blank=True)
    cuda_version = models.CharField(max_length=100, blank=True)
    torch_version = models.CharField(max_length=100, blank=True)
    command = models.TextField(blank=True, max_length=2000, help_text="Command or harness used.")
    text = models.TextField(blank=True, max_length=5000)
    link = models.URLField(blank=True, max_length=500, help_text="Logs link (reproduction) or link (note).")
    client_key = models.CharField(max_length=128, blank=True, help_text="Hashed client for rate limits.")
    moderation_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    objects = AttestationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=AttestationKind.values), name="attestation_kind_valid"),
            models.CheckConstraint(condition=Q(state__in=AttestationState.values), name="attestation_state_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.reference}"

    @cached_property
    def doc(self) -> dict[str, Any]:
        return json.loads(self.document)

    @property
    def author_label(self) -> str:
        return self.author_name or "anonymous"

    @property
    def measured_ns(self) -> float | None:
        if self.measured_value is None or self.measured_unit not in UNIT_NS:
            return None
        return self.measured_value * UNIT_NS[self.measured_unit]

    @property
    def ratio_to_run(self) -> float | None:
        """Measured value ÷ the run's own primary latency (1.05 = 5 % slower than the run)."""
        measured = self.measured_ns
        run_ns = self.run.latency_ns
        if measured is None or not run_ns:
            return None
        return measured / run_ns

    @property
    def same_statistic(self) -> bool:
        return self.measured_statistic == self.run.primary_statistic


class ReportCategory(models.TextChoices):
    INCORRECT_DATA = "incorrect_data", "incorrect data"
    NOT_COMPARABLE = "not_comparable", "not comparable"
    CORRECTNESS = "correctness", "correctness concern"
    EXPLOIT = "exploit", "suspected reward hack or exploit"
    DUPLICATE = "duplicate", "duplicate"
    OTHER = "other", "other"


class ReportState(models.TextChoices):
    OPEN = "open", "open"
    FLAGGED = "flagged", "flag published"
    RESOLVED = "resolved", "resolved"
    DISMISSED = "dismissed", "dismissed"


class IssueReportQuerySet(models.QuerySet):
    def open(self) -> IssueReportQuerySet:
        return self.filter(state=ReportState.OPEN)

    def public_flags(self) -> IssueReportQuerySet:
        return self.filter(state=ReportState.FLAGGED).exclude(public_summary="")


class IssueReport(models.Model):
    """A private report about a run; moderators may publish a flag with a public summary."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="reports")
    reference = models.CharField(
        max_length=32, unique=True, default="", help_text="Shown to the reporter on the confirmation page."
    )
    category = models.CharField(max_length=30, choices=ReportCategory.choices)
    description = models.TextField(max_length=5000)
    contact_email = models.EmailField(blank=True)
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    client_key = models.CharField(max_length=128, blank=True, help_text="Hashed client, to tell reporters apart.")
    state = models.CharField(max_length=20, choices=ReportState.choices, default=ReportState.OPEN)
    public_summary = models.TextField(blank=True, max_length=1000)
    created_at = models.DateTimeField(auto_now_add=True)
    handled_at = models.DateTimeField(null=True, blank=True)
    handled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    objects = IssueReportQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(category__in=ReportCategory.values), name="report_category_valid"),
            models.CheckConstraint(condition=Q(state__in=ReportState.values), name="report_state_valid"),
        ]

    def __str__(self) -> str:
        return f"Report {self.reference}"

    @property
    def reporter_identity(self) -> str:
        """Who reported, for telling reporters apart: the user, else the client key."""
        return f"user:{self.reporter_id}" if self.reporter_id else f"client:{self.client_key}"


class ModerationEvent(models.Model):
    """Append-only record of one curation action: who, what, on which target, why, when."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_label = models.CharField(max_length=300, blank=True, help_text="For system actors (imports).")
    action = models.CharField(max_length=50)
    target_type = models.CharField(max_length=30, help_text="run, attestation or report")
    target_id = models.CharField(max_length=64)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.PROTECT, related_name="moderation_events")
    # The target itself, so its admin page can show its events inline.
    attestation = models.ForeignKey(
        Attestation, null=True, blank=True, on_delete=models.PROTECT, related_name="moderation_events"
    )
    report = models.ForeignKey(
        IssueReport, null=True, blank=True, on_delete=models.PROTECT, related_name="moderation_events"
    )
    reason = models.TextField(blank=True)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_id}"
