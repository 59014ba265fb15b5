"""Template context every page gets."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def site(request: HttpRequest) -> dict[str, object]:
    # The sign-in page offers "Forgot your password?" only when a reset can really be mailed.
    return {"password_reset_enabled": settings.PASSWORD_RESET_ENABLED}
