"""API tokens, issued and revoked by staff in the admin.

Only a hash of a token is stored: the raw token is shown once, when it is issued. Tokens are
256-bit random strings, so a plain SHA-256 (not a slow password hash) is enough to make a leaked
table useless and keeps authentication to one indexed lookup.
"""

from __future__ import annotations

import hashlib

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
