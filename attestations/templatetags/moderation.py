from __future__ import annotations

from typing import Any

from django import template

from attestations.selectors import queue_counts

register = template.Library()


@register.simple_tag(takes_context=True)
def moderation_queues(context: dict[str, Any]) -> dict[str, int] | None:
    """The moderators' queue counts for the admin index; None for staff who cannot moderate."""
    user = context["request"].user
    if not (user.has_perm("attestations.view_attestation") or user.has_perm("attestations.view_issuereport")):
        return None
    return queue_counts()
