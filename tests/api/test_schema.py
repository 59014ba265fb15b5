"""The OpenAPI schema validates without warnings, and the docs pages work offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.factories import REPO


def test_spectacular_validates_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "schema.yaml"
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and "Error" not in result.stderr, result.stderr
    schema = yaml.safe_load(out.read_text())
    paths = set(schema["paths"])
    for expected in [
        "/api/v1/runs/",
        "/api/v1/runs/{id}/",
        "/api/v1/runs/export/csv/",
        "/api/v1/runs/export/jsonl/",
        "/api/v1/runs/export/bundles/",
        "/api/v1/groups/{key}/",
        "/api/v1/benchmarks/",
        "/api/v1/sources/",
        "/api/v1/protocols/",
        "/api/v1/environments/",
        "/api/v1/workloads/",
        "/api/v1/implementations/",
        "/api/v1/attestations/",
        "/api/v1/manifests/",
        "/api/v1/runs/{id}/attestations/",
        "/api/v1/runs/{id}/reports/",
    ]:
        assert expected in paths
    assert schema["paths"]["/api/v1/manifests/"]["post"]["security"] == [{"tokenAuth": []}]


@pytest.mark.django_db
def test_the_schema_is_served(client: Any) -> None:
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "KernelIndex API"


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "asset"), [("/api/docs/", "swagger-ui-dist"), ("/api/redoc/", "redoc")])
def test_the_docs_pages_load_nothing_from_a_cdn(client: Any, url: str, asset: str) -> None:
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert f"/static/drf_spectacular_sidecar/{asset}" in html
    assert "cdn." not in html and "unpkg" not in html and "jsdelivr" not in html


@pytest.mark.django_db
def test_the_index_links_every_endpoint(client: Any) -> None:
    index = client.get("/api/v1/").json()
    assert index["schema"].endswith("/api/schema/") and index["docs"].endswith("/api/docs/")
    for url in index["endpoints"].values():
        method = client.post if url.endswith("/manifests/") else client.get
        assert method(url, {}, format="json").status_code in {200, 401}
