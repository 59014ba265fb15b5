"""Every API error is JSON: ``{"error": {"code", "message", "field", "details"}}``.

``code`` is machine-readable (DRF's codes: ``invalid``, ``not_found``, ``not_authenticated``,
``throttled``… and ours: ``digest_mismatch``, ``invalid_manifest``, ``run_exists``…),
``message`` is for people, ``field`` names the offending input (a query parameter, a JSON
path into the body) or is null, and ``details`` lists every field error of a validation
failure.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with our own code, message and field."""

    def __init__(self, code: str, message: str, *, field: str | None = None, status_code: int = 400) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.code = code
        self.field = field


def error_body(code: str, message: str, field: str | None = None, details: list[dict[str, Any]] | None = None) -> dict:
    return {"error": {"code": code, "message": message, "field": field, "details": details or []}}


def _flatten(detail: Any, path: str = "") -> list[dict[str, Any]]:
    """DRF's nested error details → [{field, message, code}], in input order."""
    if isinstance(detail, dict):
        out: list[dict[str, Any]] = []
        for key, value in detail.items():
            name = str(key)
            if name in {"non_field_errors", "__all__"}:
                child = path
            else:
                child = f"{path}.{name}" if path else name
            out.extend(_flatten(value, child))
        return out
    if isinstance(detail, list):
        out = []
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)):
                out.extend(_flatten(value, f"{path}[{index}]"))
            else:
                out.extend(_flatten(value, path))
        return out
    code = getattr(detail, "code", None) or "invalid"
    return [{"field": path or None, "message": str(detail), "code": str(code)}]


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        return Response(
            error_body("request_too_large", "The request body is larger than this API accepts."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        # Not an API exception: a bug. Answer in the API's own format and keep the traceback.
        logger.exception("Unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        return Response(
            error_body("server_error", "The server failed to answer this request; the error has been logged."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    if isinstance(exc, ApiError):
        response.data = error_body(exc.code, str(exc.detail), exc.field, getattr(exc, "details", None))
        return response
    if isinstance(exc, exceptions.ValidationError):
        details = _flatten(exc.detail)
        first = details[0] if details else {"field": None, "message": "Invalid input.", "code": "invalid"}
        response.data = error_body(first["code"], first["message"], first["field"], details)
        return response
    if isinstance(exc, Http404):
        response.data = error_body("not_found", str(exc) or "Not found.")
        return response
    if isinstance(exc, DjangoPermissionDenied):
        response.data = error_body("permission_denied", str(exc) or "Permission denied.")
        return response
    detail = getattr(exc, "detail", None)
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    message = str(detail) if detail is not None else str(exc)
    response.data = error_body(str(code), message)
    return response


def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown paths under /api/ answer in the API's format, not with the HTML 404 page."""
    return JsonResponse(error_body("not_found", f"No API endpoint at {request.path}."), status=404)
