"""Conditional GET for the API: lists and single objects validated by the site's data version; a
matching If-None-Match is answered 304. Anonymous JSON responses are kept in the page cache under
the data version they were rendered at."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpResponse, HttpResponseBase
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from kernelindex import pagecache


def _matches(request: Request, etag: str) -> bool:
    wanted = request.headers.get("If-None-Match", "")
    candidates = {part.strip().removeprefix("W/") for part in wanted.split(",") if part.strip()}
    return etag in candidates or "*" in candidates


def _cache_key(request: Request) -> str | None:
    """Where an anonymous JSON response is kept in the page cache; None for anything else (a token,
    a signed-in session, the browsable API, the page cache off)."""
    if settings.PAGE_CACHE_SECONDS <= 0 or request.method != "GET" or request.auth is not None:
        return None
    if request.user.is_authenticated or getattr(request, "accepted_renderer", None) is None:
        return None
    if request.accepted_renderer.format != "json":
        return None
    what = f"{request.get_host()}|{request.get_full_path()}|{request.accepted_media_type}"
    return "ki:api:" + hashlib.sha256(what.encode()).hexdigest()


class VersionedMixin:
    """Conditional GET and caching for every read, after the throttles ran. The ETag is the
    site's data version (the pages' validator, kernelindex.pagecache), which every write bumps:
    a client or proxy holding a response revalidates with one cache read, no query (304), and an
    anonymous JSON response is served from the page cache while the version is unchanged (from
    the process's own memory when it has the body at that version). Only 200s get the ETag and
    are stored (a tombstone's 410 and errors are answered fresh)."""

    def versioned(self, request: Request, respond: Callable[[], HttpResponseBase]) -> HttpResponseBase:
        key = _cache_key(request)
        etag = pagecache.current_etag()
        if _matches(request, etag):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": etag})
        entry = pagecache.stored_at(key, etag) if key else None
        if entry is not None:
            cached = HttpResponse(entry["content"], content_type=entry["content_type"])
            cached["ETag"] = etag
            cached["X-Page-Cache"] = "hit"
            return cached
        response = respond()
        if response.status_code == 200:
            response["ETag"] = etag
            if key:
                response["X-Page-Cache"] = "miss"
                self._store_as = (key, etag)
        return response

    def list(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        return self.versioned(request, lambda: super(VersionedMixin, self).list(request, *args, **kwargs))  # type: ignore[misc]

    def finalize_response(self, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        store_as = getattr(self, "_store_as", None)
        if store_as is not None and isinstance(response, Response):
            response.render()  # what Django would render next; rendering twice does nothing
            key, etag = store_as
            pagecache.store_at(key, etag, {"content": response.content, "content_type": response["Content-Type"]})
        return response
