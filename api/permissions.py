"""Who may call what. Reads are public; recording runs needs an API token."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from api.models import ApiToken


class HasApiToken(permissions.BasePermission):
    message = "Submitting a manifest needs an API token (Authorization: Bearer …)."

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, ApiToken) and request.auth.is_active
