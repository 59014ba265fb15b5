"""Response headers every page gets: the content security policy, the permissions policy, and
no caching of what a signed-in user sees."""

from __future__ import annotations

from collections.abc import Callable

from csp.middleware import CSPMiddleware, PolicyParts
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import add_never_cache_headers


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware with ``CONTENT_SECURITY_POLICY_PATH_UPDATES``: sources added for
    the pages under a path prefix (the API docs run third-party UIs), so those views need no
    decorator and every other page keeps the strict policy."""

    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        if report_only or parts.update is not None:
            return parts
        for prefix, update in getattr(settings, "CONTENT_SECURITY_POLICY_PATH_UPDATES", {}).items():
            if request.path_info.startswith(prefix):
                parts.update = update
                break
        return parts


class PermissionsPolicyMiddleware:
    """``Permissions-Policy: settings.PERMISSIONS_POLICY`` on every response that has none."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if settings.PERMISSIONS_POLICY:
            response.headers.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response


class NoStoreForSignedInMiddleware:
    """``Cache-Control: no-store`` on every response to a signed-in user, so a shared or back-button
    cache never keeps a page that shows their account, forms or moderation state.

    Only requests that carry a session cookie are looked at: reading ``request.user`` loads the
    session, which would add ``Vary: Cookie`` to every anonymous page.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if settings.SESSION_COOKIE_NAME not in request.COOKIES:
            return response
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return response
        if "no-store" not in response.get("Cache-Control", ""):
            add_never_cache_headers(response)
        return response
