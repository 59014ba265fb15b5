"""API tokens, issued and revoked by staff in the admin.

Only a hash of a token is stored: the raw token is shown once, when it is issued. Tokens are
256-bit random strings, so a plain SHA-256 (not a slow password hash) is enough to make a leaked
table useless and keeps authentication to one indexed lookup.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

TOKEN_PREFIX = "kit_"


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI of TileGym'.")
    submitter_name = models.CharField(
        max_length=300,
        blank=True,
        help_text=(
            "The submitter name runs sent with this token must carry (kept whole: names contain '|', '@', "
            "spaces). Empty: the user's username."
        ),
    )
    may_record_reruns = models.BooleanField(
        default=False,
        help_text=(
            "Records runs of the KernelIndex rerun harness (protocol family kernelindex_rerun) as "
            "kernelindex_rerun evidence. Only for KernelIndex's own rerun machines."
        ),
    )
    key_prefix = models.CharField(max_length=16, help_text="The first characters of the token, to recognise it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    issued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.TextField(blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API token"
        constraints = [
            models.CheckConstraint(
                condition=Q(revoked_at__isnull=True) | ~Q(revoked_reason=""), name="api_token_revocation_has_reason"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def effective_submitter(self) -> str:
        return self.submitter_name or self.user.get_username()


# -- rerun requests ----------------------------------------------------------------------------
# The queue of reruns lives here, next to the tokens: rerun machines claim and finish requests
# with their rerun tokens (``claimed_with``), and only the API and the admin — both of this app —
# read or write it. Nothing below this app needs it: a finished rerun is an ordinary
# ``kernelindex_rerun`` run, linked to the source rows it re-measured by ``runs.rerun_bundles``.


class RerunTarget(models.TextChoices):
    """What a request re-measures; the value is the harness's ``--solution`` for the builtin ones."""

    REFERENCE = "reference", "the benchmark's reference"
    SCORING_BASELINE = "scoring-baseline", "the benchmark's scoring baseline"
    TORCH_COMPILE = "torch-compile", "torch.compile of the reference"
    TORCH_COMPILE_EAGER_NUMERICS = "torch-compile-eager-numerics", "torch.compile of the reference, eager numerics"
    RUN_SOLUTION = "run-solution", "a run's published solution"


class RerunState(models.TextChoices):
    QUEUED = "queued"
    CLAIMED = "claimed"
    DONE = "done"
    FAILED = "failed"


class RerunRequestQuerySet(models.QuerySet):
    def claimable(self, now: Any) -> RerunRequestQuerySet:
        """Queued, or claimed by a worker whose lease ran out: oldest first."""
        return self.filter(Q(state=RerunState.QUEUED) | Q(state=RerunState.CLAIMED, lease_expires_at__lt=now)).order_by(
            "requested_at", "pk"
        )

    def open(self) -> RerunRequestQuerySet:
        return self.filter(state__in=(RerunState.QUEUED, RerunState.CLAIMED))

    def for_listing(self) -> RerunRequestQuerySet:
        return self.select_related("benchmark__source", "target_run", "result_run", "requested_by", "claimed_with")


class RerunRequest(models.Model):
    """One rerun a moderator asked for, from queued through claimed to done or failed.

    A claim holds a lease: a worker that does not finish before ``lease_expires_at`` loses the
    request to the next claim, which counts another attempt; after ``max_attempts`` expired
    leases the request fails. Every state change writes a ModerationEvent (``api.reruns``).
    """

    benchmark = models.ForeignKey("runs.Benchmark", on_delete=models.PROTECT, related_name="rerun_requests")
    target = models.CharField(max_length=40, choices=RerunTarget.choices)
    target_run = models.ForeignKey(
        "runs.Run",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="rerun_requests",
        help_text="The run whose published solution is re-measured (target run-solution only).",
    )
    trials = models.PositiveSmallIntegerField(default=3, help_text="Trials, each a separate process.")
    iterations = models.PositiveSmallIntegerField(default=50, help_text="Timed iterations per case.")
    warmup_seconds = models.FloatField(default=3.0, help_text="Busy GPU work before timing, per trial.")
    reason = models.TextField(blank=True, help_text="Why the rerun was requested.")
    state = models.CharField(max_length=10, choices=RerunState.choices, default=RerunState.QUEUED, db_index=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True, db_index=True)
    worker_name = models.CharField(max_length=100, blank=True, help_text="The worker of the latest claim.")
    claimed_with = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.PROTECT, related_name="+", help_text="Token of the claim."
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Claims so far.")
    max_attempts = models.PositiveSmallIntegerField(default=3)
    finished_at = models.DateTimeField(null=True, blank=True)
    result_run = models.ForeignKey(
        "runs.Run", null=True, blank=True, on_delete=models.PROTECT, related_name="rerun_results"
    )
    failure_reason = models.TextField(blank=True)

    objects = RerunRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-requested_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(target="run-solution", target_run__isnull=False)
                | (~Q(target="run-solution") & Q(target_run__isnull=True)),
                name="rerun_request_target_run_iff_run_solution",
            ),
            models.CheckConstraint(
                condition=~Q(state="claimed") | Q(lease_expires_at__isnull=False, claimed_at__isnull=False),
                name="rerun_request_claim_has_lease",
            ),
            models.CheckConstraint(
                condition=~Q(state="done") | Q(result_run__isnull=False), name="rerun_request_done_has_run"
            ),
            models.CheckConstraint(
                condition=~Q(state="failed") | ~Q(failure_reason=""), name="rerun_request_failure_has_reason"
            ),
            models.CheckConstraint(condition=Q(trials__gte=1, iterations__gte=1), name="rerun_request_counts"),
        ]

    def __str__(self) -> str:
        what = f"run {self.target_run.public_id}" if self.target_run_id else self.get_target_display()
        return f"rerun #{self.pk}: {what} of {self.benchmark.native_id} ({self.state})"

    @property
    def solution_label(self) -> str:
        return f"run {self.target_run.public_id}" if self.target_run_id else self.target
