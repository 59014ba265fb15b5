"""Tokens are issued and revoked in the admin, stored only as hashes; clients are throttled."""

from __future__ import annotations

import hashlib
import pickle
import re
from typing import Any
from unittest import mock

import pytest
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.test import Client

from api.models import ApiToken
from api.throttling import AnonThrottle
from attestations.models import ModerationEvent
from tests.api.conftest import auth

pytestmark = pytest.mark.django_db


def test_the_admin_shows_a_new_token_once_and_keeps_only_its_hash(staff: Any, alice: Any) -> None:
    browser = Client()
    browser.force_login(staff)
    response = browser.post(
        "/admin/api/apitoken/add/",
        {"user": alice.pk, "name": "alice CI", "submitter_name": "TH3CHARLie | TileGym", "may_record_reruns": ""},
    )
    assert response.status_code == 302
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    raw = re.search(r"\b(kit_[A-Za-z0-9_-]{20,})\b", " ".join(shown)).group(1)
    token = ApiToken.objects.get()
    assert token.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in repr(ApiToken.objects.values().get())
    assert token.issued_by == staff and not token.may_record_reruns
    assert ModerationEvent.objects.filter(action="api_token.issued", target_id=str(token.pk)).exists()
    # The next page shows it (once); no later page shows the secret again.
    assert raw in browser.get(response.url).content.decode()
    page = browser.get(f"/admin/api/apitoken/{token.pk}/change/").content.decode()
    assert raw not in page and token.key_prefix in page
    # The token works until it is revoked in the admin.
    api = Client()
    assert api.get("/api/v1/runs/", **auth(raw)).status_code == 200
    browser.post("/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    token.refresh_from_db()
    assert token.revoked_at is not None and "moderator" in token.revoked_reason
    assert ModerationEvent.objects.filter(action="api_token.revoked", actor=staff).exists()
    # Both show in the moderators' log.
    log = browser.get("/admin/attestations/moderationevent/")
    assert log.status_code == 200 and "api_token.revoked" in log.content.decode()
    assert api.get("/api/v1/runs/", **auth(raw)).status_code == 401


def test_tokens_cannot_be_deleted_in_the_admin(staff: Any, alice_token: str) -> None:
    browser = Client()
    browser.force_login(staff)
    token = ApiToken.objects.get()
    assert browser.get(f"/admin/api/apitoken/{token.pk}/delete/").status_code == 403


def test_anonymous_clients_are_throttled_per_client(client: Any, settings: Any) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "3/min"},
    }
    for _ in range(3):
        assert client.get("/api/v1/sources/").status_code == 200
    limited = client.get("/api/v1/sources/")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "throttled" and int(limited["Retry-After"]) >= 1
    # A forged X-Forwarded-For does not make a new client (no trusted proxy is configured) ...
    assert client.get("/api/v1/sources/", HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 429
    # ... a different address does.
    assert client.get("/api/v1/sources/", REMOTE_ADDR="198.51.100.7").status_code == 200


def test_a_throttle_keeps_one_count_per_client_and_window_whatever_the_rate(client: Any, settings: Any) -> None:
    """DRF's sliding log stored every request's time (its cost grew with the rate); the fixed
    window stores one integer, and a refusal says when the window ends."""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "40/hour"},
    }
    with mock.patch.object(AnonThrottle, "timer", return_value=7200.0 + 3599.5):
        for _ in range(40):
            assert client.get("/api/v1/sources/").status_code == 200
        stored = {key: pickle.loads(value) for key, value in cache._cache.items()}  # type: ignore[attr-defined]
        assert [value for key, value in stored.items() if "throttle" in key] == [40]
        limited = client.get("/api/v1/sources/")
    assert limited.status_code == 429 and limited["Retry-After"] == "1"
    # The next hour is a new window.
    with mock.patch.object(AnonThrottle, "timer", return_value=10800.0):
        assert client.get("/api/v1/sources/").status_code == 200


def test_behind_a_trusted_proxy_the_forwarded_client_counts(client: Any, settings: Any) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "1/min"},
    }
    assert client.get("/api/v1/sources/", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 200
    assert client.get("/api/v1/sources/", HTTP_X_FORWARDED_FOR="203.0.113.1").status_code == 429
    assert client.get("/api/v1/sources/", HTTP_X_FORWARDED_FOR="203.0.113.2").status_code == 200


def test_a_token_has_its_own_budget(client: Any, settings: Any, alice_token: str) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "anon": "1/min",
            "token": "2/min",
        },
    }
    assert client.get("/api/v1/sources/").status_code == 200
    assert client.get("/api/v1/sources/").status_code == 429
    assert client.get("/api/v1/sources/", **auth(alice_token)).status_code == 200
    assert client.get("/api/v1/sources/", **auth(alice_token)).status_code == 200
    assert client.get("/api/v1/sources/", **auth(alice_token)).status_code == 429


def test_an_anonymous_hit_is_answered_before_drf_and_counted_once(client: Any, settings: Any) -> None:
    """A stored list, and a 304 on it, are answered from the count and the version read in one go
    (api.conditional), without DRF's dispatch; each request still counts once against the client,
    and the one over the limit gets DRF's 429 in the API's error format."""
    from rest_framework.views import APIView

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "4/min"},
    }
    first = client.get("/api/v1/sources/")
    assert first.status_code == 200 and first["X-Page-Cache"] == "miss"
    with mock.patch.object(APIView, "initial", side_effect=AssertionError("DRF dispatched a hit")):
        hit = client.get("/api/v1/sources/")
        revalidated = client.get("/api/v1/sources/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert hit.status_code == 200 and hit["X-Page-Cache"] == "hit" and hit.content == first.content
    assert hit["Content-Type"] == first["Content-Type"] and hit["ETag"] == first["ETag"]
    assert hit["Allow"] == first["Allow"] == "GET, HEAD, OPTIONS"
    assert revalidated.status_code == 304 and revalidated["ETag"] == first["ETag"] and not revalidated.content
    assert client.get("/api/v1/sources/?page_size=1").status_code == 200  # a miss: counted in DRF's throttle
    limited = client.get("/api/v1/sources/")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "throttled" and int(limited["Retry-After"]) >= 1
    # A token's request is DRF's from the start: authenticated, then counted in its own budget.
    assert client.get("/api/v1/sources/", HTTP_AUTHORIZATION="Bearer kit_unknown").status_code == 401


def test_with_the_page_cache_off_a_request_counted_before_drf_is_not_counted_again(client: Any, settings: Any) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "anon": "2/min"},
    }
    first = client.get("/api/v1/runs/")
    assert first.status_code == 200 and "X-Page-Cache" not in first
    assert client.get("/api/v1/runs/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304  # DRF's own 304
    assert client.get("/api/v1/runs/").status_code == 429
