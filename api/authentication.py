"""Bearer-token authentication for the API (``Authorization: Bearer kit_…``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from api.models import ApiToken, token_hash

# last_used_at is refreshed at most this often, so authenticated reads cost no extra write.
LAST_USED_RESOLUTION = timedelta(hours=1)


class TokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode("latin-1").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            raw = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The token contains characters a token never has.")
        token = ApiToken.objects.active().select_related("user").filter(key_hash=token_hash(raw)).first()
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            token.last_used_at = now
            token.save(update_fields=["last_used_at"])
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to an anonymous client on a protected endpoint.
        return 'Bearer realm="api"'


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API token issued by KernelIndex staff in the admin: `Authorization: Bearer kit_…`.",
        }
