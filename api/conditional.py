"""Conditional GET for the API: list endpoints validated by the site's data version, single
objects by a strong ETag over their JSON body; a matching If-None-Match is answered 304."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from kernelindex import pagecache


def _matches(request: Request, etag: str) -> bool:
    wanted = request.headers.get("If-None-Match", "")
    candidates = {part.strip().removeprefix("W/") for part in wanted.split(",") if part.strip()}
    return etag in candidates or "*" in candidates


class VersionedListMixin:
    """Conditional GET for list endpoints: the ETag is the site's data version (the pages'
    validator, kernelindex.pagecache), which every write bumps, so a client or proxy holding a
    page of a list revalidates with one cache read, no query (304), after the throttles ran."""

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        etag = pagecache.current_etag()
        if _matches(request, etag):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": etag})
        response = super().list(request, *args, **kwargs)  # type: ignore[misc]
        if response.status_code == 200:
            response["ETag"] = etag
        return response


def etag_response(request: Request, data: Any) -> Response:
    """Conditional GET: a strong ETag over the JSON body; If-None-Match → 304."""
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    etag = '"' + hashlib.sha256(body.encode("utf-8")).hexdigest()[:40] + '"'
    if _matches(request, etag):
        response = Response(status=status.HTTP_304_NOT_MODIFIED)
    else:
        response = Response(data)
    response["ETag"] = etag
    return response
