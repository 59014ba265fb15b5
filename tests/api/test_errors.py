"""Errors are JSON with a code, a message and the field; bad input never gives a 500."""

from __future__ import annotations

from typing import Any

import pytest

from runs.models import Run
from tests.api.conftest import auth
from tests.factories import import_bundles, reference_bundle

pytestmark = pytest.mark.django_db


def error_of(response: Any) -> dict[str, Any]:
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "field", "details"}
    return body["error"]


@pytest.mark.parametrize(
    ("url", "status", "code", "field"),
    [
        ("/api/v1/runs/ffffffff/", 404, "not_found", None),
        ("/api/v1/groups/sha256:nothing/", 404, "not_found", None),
        ("/api/v1/sources/nowhere/", 404, "not_found", None),
        ("/api/v1/protocols/sha256:0/", 404, "not_found", None),
        ("/api/v1/no-such-endpoint/", 404, "not_found", None),
        ("/api/v2/runs/", 404, "not_found", None),
        ("/api/v1/runs/?status=great", 400, "invalid_choice", "status"),
        ("/api/v1/runs/?evidenceLevel=trusted", 400, "invalid_choice", "evidenceLevel"),
        ("/api/v1/runs/?observedAfter=yesterday", 400, "invalid", "observedAfter"),
        ("/api/v1/runs/?observedAfter=0001-01-01T00:00:00%2B01:00", 200, None, None),
        ("/api/v1/runs/?observedBefore=9999-12-31T23:59:59-14:00", 200, None, None),
        ("/api/v1/runs/?ranked=perhaps", 400, "invalid_choice", "ranked"),
        ("/api/v1/runs/?ordering=submitter", 400, "invalid", "ordering"),
        ("/api/v1/runs/?limit=0", 400, "invalid", "limit"),
        ("/api/v1/runs/?limit=99999999999999999999", 400, "invalid", "limit"),
        ("/api/v1/runs/?cursor=%%%", 404, "invalid_cursor", "cursor"),
        ("/api/v1/runs/?cursor=eyJvIjoicmFuayJ9", 404, "invalid_cursor", "cursor"),
        ("/api/v1/runs/?submitter=a%00b", 200, None, None),
        ("/api/v1/runs/a%00b/", 404, "not_found", None),
        ("/api/v1/runs/?status=", 400, "blank", "status"),
        ("/api/v1/runs/?observedAfter=", 400, "blank", "observedAfter"),
        ("/api/v1/runs/?observedAfter=2026-07-24t02:49:25z", 200, None, None),
        ("/api/v1/runs/?observedBefore=2016-12-31T23:59:60Z", 200, None, None),
        ("/api/v1/runs/?limit=", 400, "invalid", "limit"),
        ("/api/v1/runs/?benchmark=99999999999999999999999", 200, None, None),
        # Issue 10 (found by schemathesis): "³" is a digit to str.isdigit() but not to int().
        ("/api/v1/runs/?benchmark=%C2%B3", 200, None, None),
        ("/api/v1/benchmarks/?nativeId=%C2%B3", 200, None, None),
        ("/api/v1/attestations/?kind=rumour", 400, "invalid_choice", "kind"),
    ],
)
def test_bad_reads(client: Any, url: str, status: int, code: str | None, field: str | None) -> None:
    response = client.get(url)
    assert response.status_code == status, response.content
    if status == 200:
        assert "results" in response.json()
    if code is not None:
        error = error_of(response)
        assert error["code"] == code and error["field"] == field and error["message"]


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("put", "/api/v1/runs/"),
        ("delete", "/api/v1/runs/ffffffff/"),
        ("post", "/api/v1/runs/"),
        ("get", "/api/v1/manifests/"),
        ("patch", "/api/v1/groups/"),
    ],
)
def test_unsupported_methods_are_405(client: Any, method: str, url: str) -> None:
    response = getattr(client, method)(url)
    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


def test_a_token_with_unusual_bytes_is_401_not_500(client: Any) -> None:
    response = client.get("/api/v1/runs/", HTTP_AUTHORIZATION="Bearer caf\xe9")
    assert response.status_code == 401
    assert error_of(response)["code"] == "authentication_failed"


@pytest.mark.parametrize("url", ["/api/v1/manifests/", "/api/v1/runs/{id}/reports/", "/api/v1/runs/{id}/attestations/"])
def test_an_oversized_body_is_413(client: Any, alice_token: str, settings: Any, url: str) -> None:
    import_bundles([reference_bundle()])
    url = url.format(id=Run.objects.get().public_id)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = "{" + '"x":1,' * 400 + '"y":1}'
    response = client.generic("POST", url, body, content_type="application/json", **auth(alice_token))
    assert response.status_code == 413
    assert error_of(response)["code"] == "request_too_large"


@pytest.mark.parametrize("url", ["/api/v1/manifests/", "/api/v1/runs/{id}/attestations/"])
def test_a_deeply_nested_body_is_400(client: Any, alice_token: str, url: str) -> None:
    import_bundles([reference_bundle()])
    url = url.format(id=Run.objects.get().public_id)
    body = "[" * 200000 + "]" * 200000
    response = client.generic("POST", url, body, content_type="application/json", **auth(alice_token))
    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error"


def test_an_unexpected_error_is_still_json(client: Any, monkeypatch: Any) -> None:
    from api import views

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(views.RunViewSet, "get_queryset", broken)
    response = client.get("/api/v1/runs/")
    assert response.status_code == 500
    assert error_of(response)["code"] == "server_error"
    assert "boom" not in response.content.decode()
