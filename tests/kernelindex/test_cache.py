"""kernelindex.cache: the database cache's reads agree with Django's own."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache

from kernelindex.cache import AtomicDatabaseCache


@pytest.mark.django_db
def test_get_many_reads_what_djangos_reads_and_drops_expired_rows() -> None:
    ours = caches["default"]  # the tests' page cache is in memory; production's is this class too
    assert isinstance(ours, AtomicDatabaseCache)
    django = DatabaseCache(ours._table, {"KEY_PREFIX": ours.key_prefix})
    ours.set("version", 1796523191903845777, timeout=None)
    ours.set("page", {"content": b"<p>\xe2\x80\x94</p>", "headers": [("ETag", '"ki-1"')]}, timeout=60)
    ours.set("stale", "old", timeout=-1)
    keys = ["version", "page", "stale", "missing"]
    expected = {
        "version": 1796523191903845777,
        "page": {"content": b"<p>\xe2\x80\x94</p>", "headers": [("ETag", '"ki-1"')]},
    }
    assert ours.get_many(keys) == expected
    assert ours.get("version") == 1796523191903845777
    assert ours.get("missing", "default") == "default"
    assert ours.get_many([]) == {}
    # The expired row was deleted by the read, as Django's read deletes it.
    ours.set("stale", "old", timeout=-1)
    ours.get_many(["stale"])
    assert django.get_many(keys) == expected
    assert not ours.has_key("stale")
