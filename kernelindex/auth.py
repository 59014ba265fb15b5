"""The authentication backend that throttles sign-ins (django-axes)."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' lockout check, for every sign-in that comes with a request (both sign-in
    pages, the admin's included). A call without one (the test client's ``login()``, a shell)
    has no client to throttle: it falls through to the next backend instead of failing."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
