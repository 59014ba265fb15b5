"""Fixtures for the API tests: clients, tokens, the shipped data, rerun bundles, large groups.

Every test here runs with a fresh local-memory cache, so throttle and rate-limit counters never
leak between tests and cache reads never show up in the pinned query counts (production uses
Redis or the database cache; the counts pin the API's own queries).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.core.cache import cache
from django.core.management import call_command
from rest_framework.test import APIClient

from api.services import api_token_issue
from kernelindex import canonical
from tests.factories import FIRST_BATCH_AND_RERUNS, REPO, import_bundles, kept_for_the_module, sol_bundle

DATA = REPO / "data"
# When the shipped data was "published" in the golden files: pins publishedAt.
FROZEN_NOW = datetime(2026, 8, 24, 12, 0, tzinfo=UTC)
SITE_URL = "https://kernelindex.example"


@pytest.fixture(autouse=True)
def _api_settings(settings: Any) -> Iterator[None]:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "api"}}
    settings.SITE_URL = SITE_URL
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def client() -> APIClient:
    return APIClient()


@pytest.fixture
def alice(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("alice", password="unused-password-1")


@pytest.fixture
def staff(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("moderator", "mod@example.invalid", "unused-password-2")


@pytest.fixture
def alice_token(alice: Any, staff: Any) -> str:
    """A submitter token; alice submits as the TileGym team."""
    _, raw = api_token_issue(user=alice, name="alice CI", submitter_name="TH3CHARLie | TileGym", issued_by=staff)
    return raw


@pytest.fixture
def rerun_token(django_user_model: Any, staff: Any) -> str:
    machine = django_user_model.objects.create_user("rerun-h200", password="unused-password-3")
    _, raw = api_token_issue(user=machine, name="H200 rerun machine", may_record_reruns=True, issued_by=staff)
    return raw


def auth(raw: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def import_shipped_data() -> None:
    """Import the first batch of data/ and the reruns (what the golden files describe) the way
    the README's one command does, at FROZEN_NOW. The whole corpus is tested elsewhere."""
    with mock.patch("django.utils.timezone.now", return_value=FROZEN_NOW):
        call_command("import", *map(str, FIRST_BATCH_AND_RERUNS), stdout=open("/dev/null", "w"))  # noqa: SIM115


@pytest.fixture(scope="module")
def _shipped_module(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The shipped data, imported once per test module inside a transaction that is rolled
    back after the module; each test's own transaction nests in it as a savepoint."""
    with kept_for_the_module(django_db_blocker, import_shipped_data):
        yield


@pytest.fixture
def shipped_data(_shipped_module: None, db: None) -> None:
    """Everything under data/, imported (once per module)."""


def rerun_bundle() -> dict[str, Any]:
    """A bundle the KernelIndex rerun harness wrote on an H200: L1 kernel 10's reference
    (data/reruns)."""
    return json.loads((DATA / "reruns" / "L1-010-reference-H200.json").read_text())


def submitter_bundle(*, submission_id: int = 900001, username: str = "TH3CHARLie | TileGym") -> dict[str, Any]:
    """A SOL-shaped bundle as alice's team would send it (the reference run's numbers), under the
    "submitted" source: the API never lets a submission into a source's own boards."""
    bundle = sol_bundle(submission_id=submission_id, username=username, sol_score=0.988198, latency_ms=0.01858)
    bundle["run"]["spec"]["sourceNative"]["source"] = "submitted"
    return bundle


def spread_bundles(n: int) -> list[dict[str, Any]]:
    """n runs over 25 kernels (benchmarks and groups), 40 projects with implementation documents."""
    bundles = []
    for i in range(n):
        bundle = sol_bundle(
            submission_id=200000 + i,
            username=f"submitter {i} | team",
            sol_score=round(0.9 - i * 0.0001, 6),
            latency_ms=round(0.02 + i * 0.00001, 6),
            kernel=f"{i % 25:03d}_synthetic_kernel",
        )
        implementation = {
            "apiVersion": canonical.API_VERSION,
            "kind": "Implementation",
            "metadata": {"name": f"impl-{i}"},
            "spec": {"project": f"project {i % 40}", "submitter": f"submitter {i} | team", "revision": f"r{i}"},
        }
        bundle["implementation"] = implementation
        bundle["run"]["spec"]["implementationDigest"] = canonical.digest_of(implementation)
        bundles.append(bundle)
    return bundles


def import_spread(n: int) -> None:
    import_bundles(spread_bundles(n))


def golden_path(name: str) -> Path:
    return Path(__file__).parent / "golden" / name
