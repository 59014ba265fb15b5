"""CORS for the read API: any origin may GET. Nothing else crosses origins.

Tokens travel in the Authorization header, never in cookies, so allowing every origin to read
exposes nothing a plain request could not fetch; writes (POST) stay same-origin for browsers.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

READ_METHODS = "GET, HEAD, OPTIONS"


class ApiCorsMiddleware:
    prefix = "/api/"

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(self.prefix):
            return self.get_response(request)
        preflight = request.method == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META
        if preflight:
            response = HttpResponse(status=204)
            if request.META["HTTP_ACCESS_CONTROL_REQUEST_METHOD"].upper() in {"GET", "HEAD"}:
                response["Access-Control-Allow-Origin"] = "*"
                response["Access-Control-Allow-Methods"] = READ_METHODS
                response["Access-Control-Allow-Headers"] = "Authorization, If-None-Match"
                response["Access-Control-Max-Age"] = "86400"
            return response
        response = self.get_response(request)
        if request.method in {"GET", "HEAD"}:
            response["Access-Control-Allow-Origin"] = "*"
            response["Access-Control-Expose-Headers"] = "ETag, Retry-After, Content-Disposition"
        return response
