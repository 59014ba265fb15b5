"""Rate limits for posts, shared by every gunicorn worker through Django's cache.

Fixed windows per client and scope: at most ``settings.RATE_LIMIT_PER_MINUTE`` posts in a
clock minute and ``settings.RATE_LIMIT_PER_DAY`` in a UTC day. Counting is one atomic increment
(``count_up``: INCR on Redis; ``cache.incr`` and, for a window's first request, ``cache.add`` in
``kernelindex.cache.AtomicDatabaseCache``), so twenty parallel requests get twenty distinct counts
and exactly the allowed number passes. The API's throttles (``api.throttling``) count the same way.

Stable API for the forms and the JSON API::

    allowed, retry_after = ratelimit.check(request, "submissions")

Signed-in users are limited too, by account rather than by address (an account is one client
wherever it posts from, and a shared office address does not lock it out); only staff, who
moderate what the limits protect, are not. The web forms and the API use the same scope,
``SUBMISSIONS``, so one client has one budget across both.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from kernelindex.clients import client_key

SUBMISSIONS = "submissions"

MINUTE = 60
DAY = 86400


def limits() -> tuple[tuple[int, int], ...]:
    """(window seconds, allowed posts) pairs, read at call time so tests can override them."""
    return ((MINUTE, int(settings.RATE_LIMIT_PER_MINUTE)), (DAY, int(settings.RATE_LIMIT_PER_DAY)))


def count(cache_key: str, window: int, allowed: int, *, now: float) -> tuple[bool, int]:
    """Count one request under ``cache_key`` in the fixed ``window`` holding ``now``: (allowed,
    seconds until the window ends if not). One cache round trip once the window's counter exists,
    whatever the rate: nothing but the count is stored."""
    key, timeout = _counter(cache_key, window, now)
    return _verdict(count_up(key, timeout=timeout), allowed, window, now)


def _counter(cache_key: str, window: int, now: float) -> tuple[str, int]:
    """The key of the counter of the window holding ``now``, and how long it is kept."""
    return f"{cache_key}:{window}:{int(now // window)}", window + 60


def _verdict(counted: int, allowed: int, window: int, now: float) -> tuple[bool, int]:
    """(allowed, seconds until the window holding ``now`` ends if not)."""
    if counted > allowed:
        return False, max(1, int((int(now // window) + 1) * window - now) + 1)
    return True, 0


def count_reading(
    cache_key: str, window: int, allowed: int, *, now: float, other: Any, other_key: str
) -> tuple[bool, int, Any]:
    """``count`` and ``other.get(other_key)`` together: (allowed, retry after, the value). One
    round trip when ``other`` is a cache on the same Redis as the counters (the API's throttle and
    the site's data version: kernelindex.settings puts both on REDIS_URL), two otherwise."""
    key, timeout = _counter(cache_key, window, now)
    if _redis(cache) is not None and _redis(other) is not None and cache._server == other._server:
        redis, raw_key = cache.client.get_client(write=True), cache.make_key(key)
        pipe = redis.pipeline(transaction=False)
        pipe.incr(raw_key)
        pipe.get(other.make_key(other_key))
        counted, raw = pipe.execute()
        if counted == 1:
            redis.expire(raw_key, timeout)
        value = None if raw is None else other.client.decode(raw)
    else:
        counted, value = count_up(key, timeout=timeout), other.get(other_key)
    return (*_verdict(counted, allowed, window, now), value)


def _redis(some_cache: Any) -> Any:
    """The django-redis client getter of a cache, None for any other backend."""
    return getattr(getattr(some_cache, "client", None), "get_client", None)


def count_up(key: str, *, timeout: int) -> int:
    """One more under ``key`` in the cache: the count so far, this one included; a new counter
    expires after ``timeout`` seconds.

    On Redis it is INCR, and EXPIRE after the INCR that made the counter (Redis's own rate-limit
    pattern): django-redis's ``incr`` runs a Lua script that first checks the key exists, 10 µs
    of the server's CPU a call against 1 µs for INCR, and 12 µs more of the worker's, on every
    API request. A worker that died between the two would leave one counter without an expiry,
    which nothing reads once its window is over. Elsewhere ``cache.incr``, and for a window's
    first request ``cache.add``, which creates the counter only if no other worker did."""
    client = _redis(cache)
    if client is not None:  # django-redis
        redis, raw_key = client(write=True), cache.make_key(key)
        counted = redis.incr(raw_key)
        if counted == 1:
            redis.expire(raw_key, timeout)
        return counted
    try:
        return cache.incr(key)
    except ValueError:
        return 1 if cache.add(key, 1, timeout=timeout) else cache.incr(key)


def hit(key: str, scope: str, *, now: float | None = None) -> tuple[bool, int]:
    """Count one post by ``key`` in ``scope``; (allowed, seconds until it would be allowed)."""
    now = time.time() if now is None else now
    for window, allowed in limits():
        passed, retry_after = count(f"ratelimit:{scope}:{key}", window, allowed, now=now)
        if not passed:
            return False, retry_after
    return True, 0


def check(request: HttpRequest, scope: str = SUBMISSIONS) -> tuple[bool, int]:
    """Count this request against its client's limit: (allowed, retry_after seconds)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        if user.is_staff:
            return True, 0
        return hit(f"user:{user.pk}", scope)
    return hit(client_key(request), scope)
