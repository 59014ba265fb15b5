"""A cache in front of the public pages: a site-wide data version, conditional GET and full-page
caching for anonymous visitors.

*The data version* is one integer in the ``pages`` cache (Redis with ``REDIS_URL``, the
database cache otherwise). Every write that can change a page bumps it: the import engine, the
moderation services, community submissions, and — as a net for anything else, the admin's
change forms included — every successful POST/PUT/PATCH/DELETE through the site. A bump
increments the key at once and again when the surrounding transaction commits, so a page
rendered from not-yet-committed data is never served under the version that follows the
commit. When the key is missing (a fresh cache, an eviction) it starts again from the clock in
nanoseconds, so it never comes back to a number an older cached page was stored under.

*Pages* carry the version in their validator (``ETag: "ki-<version>-<day>"``; the day because
the citation page prints today's date), so a matching ``If-None-Match`` is answered 304 without
rendering; the full response of an anonymous GET is kept under its URL with the version it was
rendered at, and served while the version is unchanged. A hit reads the version from the shared
cache and the page from the worker's memory (``recent``) when the worker holds it at that
version; else from the shared cache, once.

*Never for anyone signed in*: a request that carries a session or messages cookie is passed to
the view untouched (no lookup, no store, ``Cache-Control: private``); ``request.user`` is read
only then, lazily. A response that sets a cookie or will have one set by an outer middleware (a
form's CSRF token, a queued message, a changed session), varies on anything but Cookie, streams,
or has a status other than 200/410 is never stored and gets no page ETag. Paths under /admin/, /api/
and /accounts/ are left alone: the API keeps its own throttling and validators, and caches its
lists itself, after the throttles (``api.conditional``, through ``stored_at`` and ``store_at``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotModified
from django.utils import timezone
from django.utils.cache import patch_cache_control
from django.utils.http import http_date, parse_http_date_safe

logger = logging.getLogger(__name__)

VERSION_KEY = "ki:data-version"
ALIAS = "pages"
SKIPPED_PREFIXES = ("/admin/", "/api/", "/accounts/", "/static/", "/healthz")
PRIVATE_COOKIES = ("sessionid", "messages")
STORED_STATUSES = (200, 410)
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def _cache() -> Any:
    """The ``pages`` cache; a deployment that configures only ``default`` uses that one."""
    return caches[ALIAS if ALIAS in settings.CACHES else "default"]


def _fresh_version() -> int:
    return time.time_ns()


def data_version() -> int:
    """The current site-wide data version (one cache read)."""
    cache = _cache()
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, _fresh_version(), timeout=None)
        version = cache.get(VERSION_KEY)
    return int(version)


def _increment() -> None:
    cache = _cache()
    # A database cache works inside the caller's transaction: a savepoint keeps a failure (a
    # missing cache table) from aborting the import or moderation action around it.
    guard = transaction.atomic() if isinstance(cache, DatabaseCache) else contextlib.nullcontext()
    try:
        with guard:
            try:
                cache.incr(VERSION_KEY)
            except ValueError:  # missing: start from the clock, above any version used before
                if not cache.add(VERSION_KEY, _fresh_version(), timeout=None):
                    cache.incr(VERSION_KEY)
    except Exception:  # the write itself must not fail because the page cache is unreachable
        logger.exception("could not bump the data version; cached pages may be stale until they expire")


def bump_data_version() -> None:
    """Every cached page and validator is stale from now on: call it in any write that changes
    what a page shows. Bumps now and once more when the transaction commits (a rollback drops
    the second bump with the transaction)."""
    _increment()
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(_increment)


def _private(request: HttpRequest) -> bool:
    """Signed in or carrying per-visitor state: never served or stored from the cache."""
    if any(name in request.COOKIES for name in PRIVATE_COOKIES):
        return True
    # Pages sign visitors in only through the session: without its cookie nobody is signed in.
    # (Asking request.user would load the empty session and add "Vary: Cookie" to every
    # anonymous page, which a CDN could then never share.)
    return bool(request.COOKIES.get(settings.SESSION_COOKIE_NAME))


def _page_key(request: HttpRequest) -> str:
    digest = hashlib.sha256(f"{request.get_host()}|{request.get_full_path()}".encode()).hexdigest()
    return f"ki:page:{digest}"


def _etag(version: int) -> str:
    return f'"ki-{version}-{timezone.now():%Y%m%d}"'


def current_etag(version: int | None = None) -> str:
    """The validator of anything that changes only when the data does: of ``version`` when the
    caller read it already (``version_cache``), else one cache read."""
    return _etag(data_version() if version is None else version)


def version_cache() -> tuple[Any, str]:
    """(the cache, the key) of the data version, for a caller that reads it along with another
    cache operation (api.conditional: with the throttle's count, in one round trip)."""
    return _cache(), VERSION_KEY


class _Recent:
    """Responses this process stored or read lately, by key, each with the validator it was
    rendered at: a hit needs only the version from the shared cache, not the body (on the
    database cache, reading back and decoding a 100 kB list cost more than the view's own work).
    Coherent without invalidation, because an entry is served only while the shared version
    is still the one it was stored at. Bounded in bytes, least recently used first out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.entries: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str, etag: str) -> dict[str, Any] | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None or entry.get("etag") != etag:
                return None
            self.entries.move_to_end(key)
            return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        size = len(entry["content"])
        with self.lock:
            self._drop(key)
            if size > self.limit // 8:  # a few huge bodies would push every other one out
                return
            self.entries[key] = entry
            self.size += size
            while self.size > self.limit:
                self._drop(next(iter(self.entries)))

    def _drop(self, key: str) -> None:
        old = self.entries.pop(key, None)
        if old is not None:
            self.size -= len(old["content"])

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0


recent = _Recent(16 * 1024 * 1024)


def stored_at(key: str, etag: str) -> dict[str, Any] | None:
    """The entry ``store_at`` left under ``key`` if it was stored at validator ``etag``: from
    this process's memory when it has it, else from the shared cache (one read); an
    unreachable cache gives none."""
    entry = recent.get(key, etag)
    if entry is not None:
        return entry
    try:
        entry = _cache().get(key)
    except Exception:
        logger.exception("page cache unavailable")
        return None
    if not (isinstance(entry, dict) and entry.get("etag") == etag):
        return None
    recent.put(key, entry)
    return entry


def store_at(key: str, etag: str, entry: dict[str, Any]) -> None:
    """Keep ``entry`` under ``key`` for PAGE_CACHE_SECONDS, valid while ``etag`` is current."""
    if settings.PAGE_CACHE_SECONDS > 0:
        entry = {**entry, "etag": etag}
        PageCacheMiddleware._store(_cache(), key, entry)
        recent.put(key, entry)


def _etag_matches(request: HttpRequest, etag: str) -> bool:
    header = request.headers.get("If-None-Match", "")
    return any(candidate.strip().removeprefix("W/") == etag for candidate in header.split(","))


def _not_modified(etag: str, last_modified: str | None) -> HttpResponseNotModified:
    response = HttpResponseNotModified()
    response["ETag"] = etag
    if last_modified:
        response["Last-Modified"] = last_modified
    _public(response)
    return response


def _public(response: HttpResponseBase) -> None:
    # Browsers revalidate (a cheap 304) after max-age; shared caches (a CDN) keep it s-maxage and
    # serve it stale while they revalidate.
    patch_cache_control(
        response,
        public=True,
        max_age=settings.PAGE_CACHE_MAX_AGE,
        s_maxage=settings.PAGE_CACHE_SHARED_MAX_AGE,
        stale_while_revalidate=settings.PAGE_CACHE_STALE_WHILE_REVALIDATE,
    )


def _storable(request: HttpRequest, response: HttpResponseBase) -> bool:
    if response.streaming or response.status_code not in STORED_STATUSES or response.cookies:
        return False
    # The middlewares outside this one set their cookies after it: ask the request whether they
    # will (a form's CSRF token, a message queued for the next page, a changed session).
    if request.META.get("CSRF_COOKIE_NEEDS_UPDATE"):
        return False
    messages = getattr(request, "_messages", None)
    if messages is not None and getattr(messages, "_queued_messages", None):
        return False
    session = getattr(request, "session", None)
    if session is not None and session.modified:
        return False
    vary = {part.strip().lower() for part in response.get("Vary", "").split(",") if part.strip()}
    return vary <= {"cookie"}  # only ever stored for, and served to, requests without a session


class CacheUnavailable(Exception):
    pass


class PageCacheMiddleware:
    """Conditional GET and full-page caching of public pages for anonymous visitors."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method in WRITE_METHODS:
            response = self.get_response(request)
            if response.status_code < 400:
                bump_data_version()
            return response
        if request.method not in ("GET", "HEAD") or request.path.startswith(SKIPPED_PREFIXES):
            return self.get_response(request)
        if _private(request):
            response = self.get_response(request)
            patch_cache_control(response, private=True)
            return response
        try:
            return self._anonymous(request)
        except CacheUnavailable:
            return self.get_response(request)

    def _anonymous(self, request: HttpRequest) -> HttpResponseBase:
        cache = _cache()
        key = _page_key(request)
        # A revalidation that matches needs only the version: fetching the stored page too
        # (hundreds of kB for a benchmark page with its charts) cost more than the 304 saves.
        # With the page cache off (PAGE_CACHE_SECONDS=0) nothing is stored: only the version.
        storing = settings.PAGE_CACHE_SECONDS > 0
        # The body comes from this process's memory when it holds the page at the current
        # version (``recent``): reading back and decoding a stored page cost more than the rest
        # of a hit. Otherwise from the shared cache, and it is kept in memory from then on.
        try:
            version = cache.get(VERSION_KEY)
            if version is None:
                version = data_version()
        except Exception as error:  # the site keeps answering, uncached, without its page cache
            logger.exception("page cache unavailable")
            raise CacheUnavailable from error
        etag = _etag(version)
        # The etag holds the version: an entry stored at it is fresh.
        if _etag_matches(request, etag):
            return _not_modified(etag, None)
        entry = stored_at(key, etag) if storing else None
        # A page with a validator of its own (a JSON twin's ETag is its run's digest): stored
        # like any page, and answered 304 on that validator from the stored entry.
        own = entry.get("own_etag") if entry is not None else None
        if own and _etag_matches(request, own.removeprefix("W/")):
            return _not_modified(own, entry["last_modified"])
        if entry is not None:
            since = parse_http_date_safe(request.headers.get("If-Modified-Since", ""))
            modified = parse_http_date_safe(entry["last_modified"])
            if since is not None and modified is not None and modified <= since and entry["status"] == 200:
                return _not_modified(etag, entry["last_modified"])
            response = HttpResponse(entry["content"], status=entry["status"])
            for header, value in entry["headers"]:
                response[header] = value
            response["X-Page-Cache"] = "hit"
            return response
        response = self.get_response(request)
        if not _storable(request, response):
            return response
        own_etag = response.get("ETag")
        if not own_etag:
            response["ETag"] = etag
        response["Last-Modified"] = http_date()
        _public(response)
        if storing and request.method == "GET":
            headers = [(h, v) for h, v in response.items() if h.lower() not in ("vary", "x-page-cache")]
            entry = {
                "version": version,
                "etag": etag,
                "status": response.status_code,
                "headers": headers,
                "content": response.content,
                "last_modified": response["Last-Modified"],
                "own_etag": own_etag,
            }
            self._store(cache, key, entry)
            recent.put(key, entry)
        response["X-Page-Cache"] = "miss"
        return response

    @staticmethod
    def _store(cache: Any, key: str, entry: dict[str, Any]) -> None:
        try:
            cache.set(key, entry, timeout=settings.PAGE_CACHE_SECONDS)
        except Exception:
            logger.exception("could not store a page in the page cache")
