"""Project-wide pytest configuration: marks and the rules for when browser tests may skip.

Fixtures for one area live in tests/<area>/conftest.py.

Marks:
- ``browser``: drives Debian's chromium through Playwright. Skipped, with the reason, when
  chromium is missing on a developer's machine; on CI (CI=true) a missing chromium is not a
  reason to skip, so the test runs and fails loudly instead.
- ``slow``: takes more than a few seconds; ``pytest -m "not slow"`` leaves them out locally.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# scripts/test installs chromium with apt-get and exports its path; the issue fixes /usr/bin/chromium.
CHROMIUM = Path(os.environ.get("KI_CHROMIUM", "/usr/bin/chromium"))


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives Debian's chromium with Playwright (skips locally when chromium is missing)"
    )
    config.addinivalue_line("markers", "slow: takes more than a few seconds (deselect with -m 'not slow')")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CHROMIUM.exists() or on_ci():
        return
    skip = pytest.mark.skip(
        reason=f"{CHROMIUM} not found: install Debian's chromium (scripts/test does it as root) to run browser tests"
    )
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def page_cache(settings: Any) -> Iterator[None]:
    """Each test gets an empty page cache of its own in memory (kernelindex.pagecache), so a page
    cached by one test is never served to the next one, whose database was rolled back; pages
    still go through the cache and its validators as in production. A database page cache
    would add its reads and writes to every query count the tests pin (the tests in
    tests/kernelindex/test_pagecache.py cover the database cache itself)."""
    from django.core.cache import caches

    settings.CACHES = {
        **settings.CACHES,
        "pages": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ki-test-pages"},
    }
    from kernelindex import pagecache

    pages = caches["pages"]
    pages.clear()
    pagecache.recent.clear()
    yield
    pages.clear()
    pagecache.recent.clear()
