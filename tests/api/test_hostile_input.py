"""Issue 10 on the API: script URLs and input that used to give a 500 are a 400 naming the field,
and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from runs.models import Run
from tests.api.conftest import auth
from tests.api.test_submissions import snapshot
from tests.hostile import (
    BROKEN_BUNDLES,
    GOOD_URL,
    SCRIPT_URLS,
    deeply_nested_text,
    ten_megabyte_external_id,
    with_artifact_url,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/manifests/"


def post(client: Any, body: Any, token: str) -> Any:
    text = body if isinstance(body, str) else json.dumps(body)
    return client.generic("POST", URL, text, content_type="application/json", **auth(token))


@pytest.mark.parametrize("url", SCRIPT_URLS, ids=repr)
def test_an_artifact_url_that_is_not_http_is_refused(client: Any, alice_token: str, url: str) -> None:
    before = snapshot()
    response = post(client, with_artifact_url(url), alice_token)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_manifest"
    assert error["field"] == "run.spec.artifacts[0].url", error
    assert "http" in error["message"]
    assert snapshot() == before


def test_an_http_artifact_url_is_accepted(client: Any, alice_token: str) -> None:
    response = post(client, with_artifact_url(GOOD_URL), alice_token)
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(("case", "build", "words"), BROKEN_BUNDLES, ids=[case[0] for case in BROKEN_BUNDLES])
def test_broken_bundles_are_a_400_naming_the_field(
    client: Any, alice_token: str, case: str, build: Callable[[], dict[str, Any]], words: list[str]
) -> None:
    before = snapshot()
    response = post(client, build(), alice_token)
    assert response.status_code == 400, (case, response.status_code, response.content[:500])
    error = response.json()["error"]
    for word in words:
        assert word in error["message"], (word, error)
    assert snapshot() == before


def test_a_body_nested_100000_deep_is_a_400(client: Any, alice_token: str) -> None:
    response = post(client, deeply_nested_text(), alice_token)
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]["message"]
    assert not Run.objects.exists()


def test_a_10_mb_external_id_is_refused_before_it_is_read(client: Any, alice_token: str) -> None:
    response = post(client, ten_megabyte_external_id(), alice_token)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert not Run.objects.exists()
