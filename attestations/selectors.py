"""Reads for the moderation queues (admin index, run changelist)."""

from __future__ import annotations

from django.db.models import BooleanField, Case, Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from attestations.models import Attestation, IssueReport, ModerationEvent, ReportState
from attestations.moderation import QUARANTINE_DECISIONS, QUARANTINE_PROPOSED
from runs.models import Run


def _latest(actions: tuple[str, ...]) -> Subquery:
    return Subquery(
        ModerationEvent.objects.filter(run=OuterRef("pk"), action__in=actions)
        .order_by("-created_at")
        .values("created_at")[:1]
    )


def runs_with_moderation(queryset: QuerySet[Run] | None = None) -> QuerySet[Run]:
    """Annotate ``open_reports`` (int) and ``quarantine_proposed`` (bool: proposed and not yet
    decided) with correlated subqueries: no JOIN, so no duplicated rows and one query a page."""
    queryset = Run.objects.all() if queryset is None else queryset
    open_reports = (
        IssueReport.objects.filter(run=OuterRef("pk"), state=ReportState.OPEN)
        .order_by()
        .values("run")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return queryset.annotate(
        open_reports=Coalesce(Subquery(open_reports, output_field=IntegerField()), Value(0)),
        proposed_at=_latest((QUARANTINE_PROPOSED,)),
        decided_at=_latest(QUARANTINE_DECISIONS),
    ).annotate(
        quarantine_proposed=Case(
            When(
                Q(proposed_at__isnull=False) & (Q(decided_at__isnull=True) | Q(proposed_at__gt=F("decided_at"))),
                then=Value(True),
            ),
            default=Value(False),
            output_field=BooleanField(),
        )
    )


def queue_counts() -> dict[str, int]:
    """What waits for moderators (3 queries)."""
    return {
        "pending_attestations": Attestation.objects.pending().count(),
        "open_reports": IssueReport.objects.open().count(),
        "quarantine_proposals": runs_with_moderation().filter(quarantine_proposed=True).count(),
    }
