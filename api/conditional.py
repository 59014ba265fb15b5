"""Conditional GET for the API: lists and single objects validated by the site's data version; a
matching If-None-Match is answered 304. Anonymous JSON responses are kept in the page cache under
the data version they were rendered at.

An anonymous GET is counted by its throttle and reads the data version in one cache round trip,
before DRF's dispatch (``VersionedMixin.dispatch``); a stored response, or a 304 on one, is then
answered at once, without DRF's request, authentication, negotiation and response rendering,
which cost more than the rest of a hit. Anything else goes on to DRF with both results, so the
throttle does not count it twice nor the view read the version again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotModified
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from api.throttling import COUNTED, AnonThrottle, TokenThrottle
from kernelindex import pagecache, ratelimit

logger = logging.getLogger(__name__)

# Where a request's data version read before the view is kept (``VersionedMixin.dispatch``).
_VERSION = "_ki_data_version"


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
    return _key(request, request.accepted_media_type)


def _hit(entry: dict[str, Any], etag: str) -> HttpResponse:
    """The response ``store_at`` kept, served again under its validator."""
    response = HttpResponse(entry["content"], content_type=entry["content_type"])
    response["ETag"] = etag
    response["X-Page-Cache"] = "hit"
    return response


def _key(request: Request | HttpRequest, media_type: str) -> str:
    what = f"{request.get_host()}|{request.get_full_path()}|{media_type}"
    return "ki:api:" + hashlib.sha256(what.encode()).hexdigest()


class VersionedMixin:
    """Conditional GET and caching for every read, after the throttles ran. The ETag is the
    site's data version (the pages' validator, kernelindex.pagecache), which every write bumps:
    a client or proxy holding a response revalidates with one cache read, no query (304), and an
    anonymous JSON response is served from the page cache while the version is unchanged (from
    the process's own memory when it has the body at that version). Only 200s get the ETag and
    are stored (a tombstone's 410 and errors are answered fresh)."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        early = self._answer_early(request)
        return early if early is not None else super().dispatch(request, *args, **kwargs)  # type: ignore[misc]

    def _answer_early(self, request: HttpRequest) -> HttpResponseBase | None:
        """A stored response (or 304 on it) for an anonymous GET that its throttle lets through;
        None to go on to DRF, with the count and the version kept on the request."""
        # Anonymous: no token (the API knows no other sign-in). Only where the anonymous throttle
        # is the only one that counts such a request (not a submission endpoint's own).
        if request.method != "GET" or "HTTP_AUTHORIZATION" in request.META:
            return None
        throttles = set(self.throttle_classes)  # type: ignore[attr-defined]
        if AnonThrottle not in throttles or not throttles <= {AnonThrottle, TokenThrottle}:
            return None
        throttle = AnonThrottle()
        version_cache, version_key = pagecache.version_cache()
        try:
            if throttle.rate is None:
                version = version_cache.get(version_key)
            else:
                key = throttle.key_of(request)
                allowed, retry_after, version = ratelimit.count_reading(
                    key,
                    throttle.duration,
                    throttle.num_requests,
                    now=throttle.timer(),
                    other=version_cache,
                    other_key=version_key,
                )
                setattr(request, COUNTED, (key, allowed, retry_after))
                if not allowed:
                    return None  # DRF answers 429, in the API's error format
        except Exception:  # the view reads both again, and answers or fails as it would have
            logger.exception("could not count the request or read the data version")
            return None
        if version is None:  # a fresh cache: the view starts the version (pagecache.data_version)
            return None
        setattr(request, _VERSION, version)
        if settings.PAGE_CACHE_SECONDS <= 0:
            return None
        etag = pagecache.current_etag(version)
        entry = pagecache.stored_at(_key(request, self.renderer_classes[0].media_type), etag)  # type: ignore[attr-defined]
        if entry is None:
            return None
        if _matches(request, etag):
            response: HttpResponseBase = HttpResponseNotModified()
            response["ETag"] = etag
        else:
            response = _hit(entry, etag)
        response["Allow"] = ", ".join(self.allowed_methods)  # type: ignore[attr-defined]  # as DRF's
        return response

    def versioned(self, request: Request, respond: Callable[[], HttpResponseBase]) -> HttpResponseBase:
        key = _cache_key(request)
        etag = pagecache.current_etag(getattr(request, _VERSION, None))
        if _matches(request, etag):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": etag})
        entry = pagecache.stored_at(key, etag) if key else None
        if entry is not None:
            return _hit(entry, etag)
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
