"""The same limit on Redis (django-redis, production): INCR is atomic, so 20 threads counting
at once let exactly the allowed number through."""

from __future__ import annotations

import os
import threading
import uuid

import pytest
from django.test import override_settings

from kernelindex import pagecache, ratelimit
from tests.conftest import on_ci

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"
REDIS_CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
    }
}


@pytest.fixture
def redis_cache():
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError:
        if on_ci():
            raise
        pytest.skip(f"no Redis at {REDIS_URL}")
    with override_settings(CACHES=REDIS_CACHES, RATE_LIMIT_PER_MINUTE=5, RATE_LIMIT_PER_DAY=50):
        yield


def test_twenty_threads_get_exactly_five_passes(redis_cache, minute_room):
    key = f"c:test-{uuid.uuid4().hex}"
    barrier = threading.Barrier(20)
    results: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        allowed, _ = ratelimit.hit(key, "submissions")
        with lock:
            results.append(allowed)

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(results) == [False] * 15 + [True] * 5


def test_a_counter_is_an_integer_that_expires_after_its_window(redis_cache, minute_room):
    import redis
    from django.core.cache import cache

    key = f"c:test-{uuid.uuid4().hex}"
    assert [ratelimit.count_up(key, timeout=120) for _ in range(3)] == [1, 2, 3]
    assert cache.get(key) == 3  # the cache reads what INCR wrote
    ttl = redis.Redis.from_url(REDIS_URL).ttl(cache.make_key(key))
    assert 0 < ttl <= 120
    for window, _ in ratelimit.limits():
        assert ratelimit.count(key, window, 10, now=1_000_000.0) == (True, 0)
    for window, _ in ratelimit.limits():
        bucket = f"{key}:{window}:{int(1_000_000 // window)}"
        assert 0 < redis.Redis.from_url(REDIS_URL).ttl(cache.make_key(bucket)) <= window + 60


def test_a_count_and_the_data_version_take_one_round_trip(redis_cache, minute_room):
    """The API counts an anonymous request and reads the data version together (api.conditional):
    on one Redis, one pipelined round trip once the window's counter exists."""
    from unittest import mock

    import redis
    from django.core.cache import caches

    prefix = f"pages-test-{uuid.uuid4().hex}"
    pages = {**REDIS_CACHES["default"], "KEY_PREFIX": prefix}
    with override_settings(CACHES={**REDIS_CACHES, "pages": pages}):
        version_cache, version_key = pagecache.version_cache()
        assert version_cache is caches["pages"]
        version = pagecache.data_version()
        key = f"c:test-{uuid.uuid4().hex}"
        assert ratelimit.count_reading(key, 60, 2, now=1_000_000.0, other=version_cache, other_key=version_key) == (
            True,
            0,
            version,
        )
        sent = mock.patch.object(
            redis.connection.Connection,
            "send_packed_command",
            autospec=True,
            side_effect=redis.connection.Connection.send_packed_command,
        )
        with sent as sends:
            second = ratelimit.count_reading(key, 60, 2, now=1_000_000.0, other=version_cache, other_key=version_key)
        assert second == (True, 0, version) and sends.call_count == 1
        third = ratelimit.count_reading(key, 60, 2, now=1_000_010.0, other=version_cache, other_key=version_key)
        assert third == (False, 11, version)  # the window ends at 1,000,020
        redis.Redis.from_url(REDIS_URL).delete(version_cache.make_key(version_key))
