"""Issue 10: no script through links, and no benchmark link that climbs out of /benchmarks/.

After every URL variant of ``tests.hostile.SCRIPT_URLS`` has been tried through the API, the
attestation form and an import (each refused), and then planted straight in the database (as
data stored before the checks existed would be), no page — the run page with its artifacts,
provenance link and attestations, the source page, the admin change pages — has an ``href`` or
``src`` whose scheme is anything but http(s), ``mailto:`` or none (relative)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from api.services import api_token_issue
from attestations import submissions
from runs.models import Benchmark, Run, Source
from tests.factories import import_bundles
from tests.hostile import SCRIPT_URLS, redigest, submitted_bundle, with_artifact_url

pytestmark = pytest.mark.django_db

# The WHATWG URL parser: leading/trailing C0 controls and spaces go, tabs and newlines anywhere go,
# then a scheme is letters, digits, "+", "-", "." before the first ":".
_STRIP = re.compile(r"^[\x00-\x20]+|[\x00-\x20]+$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def browser_scheme(url: str) -> str | None:
    cleaned = re.sub(r"[\t\n\r]", "", _STRIP.sub("", url))
    match = _SCHEME.match(cleaned)
    return match.group(1).lower() if match else None


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.extend(value or "" for name, value in attrs if name in {"href", "src", "action", "formaction"})


def bad_links(html: str) -> list[str]:
    parser = Links()
    parser.feed(html)
    return [url for url in parser.found if browser_scheme(url) not in {None, "http", "https", "mailto"}]


def test_the_checker_sees_what_a_browser_would_run() -> None:
    assert browser_scheme("java\tscript:alert(1)") == "javascript"
    assert browser_scheme("\x01javascript:alert(1)") == "javascript"
    assert browser_scheme("%6Aavascript:alert(1)") is None  # a relative path to a browser
    assert bad_links('<a href="&#106;avascript:alert(1)">x</a><img src="data:image/png;base64,AA">') == [
        "javascript:alert(1)",
        "data:image/png;base64,AA",
    ]


def test_no_page_links_a_script_url(client: Any, django_user_model: Any, tmp_path: Path, settings: Any) -> None:
    settings.RATE_LIMIT_PER_MINUTE = settings.RATE_LIMIT_PER_DAY = 1000  # the limits have their own tests
    root = django_user_model.objects.create_superuser("root", "root@example.org", "root-password-1")
    _, raw = api_token_issue(user=root, name="ci", submitter_name="TH3CHARLie | TileGym", issued_by=root)
    run = Run.objects.get(public_id=import_bundles([submitted_bundle()]).run_ids[0])
    anon = Client()
    for index, url in enumerate(SCRIPT_URLS):
        # Refused by the API, the attestation form and the import.
        response = client.generic(
            "POST",
            "/api/v1/manifests/",
            json.dumps(with_artifact_url(url, external_id=f"v{index}")),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {raw}",
        )
        assert response.status_code == 400, (url, response.content)
        form = anon.post(
            reverse("attestations:attest", args=[run.public_id]), {"kind": "note", "text": "x", "link": url}
        )
        assert form.status_code == 400, url
        assert "http" in form.content.decode(), form.content.decode()[-3000:]
        bundle = submitted_bundle(f"w{index}")
        bundle["run"]["metadata"]["annotations"] = {"kernelindex.dev/provenance-url": url}
        path = tmp_path / f"{index}.json"
        path.write_text(json.dumps(redigest(bundle)))
        with pytest.raises(CommandError):
            call_command("import", str(path), stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert Run.objects.count() == 1 and not run.attestations.exists()

    # Planted as rows stored before the checks would be: every variant in every stored URL.
    document = json.loads(run.document)
    document["spec"]["artifacts"] = [{"name": f"artifact {i}", "url": url} for i, url in enumerate(SCRIPT_URLS)]
    Run.objects.filter(pk=run.pk).update(document=json.dumps(document), provenance_url=SCRIPT_URLS[0])
    Source.objects.filter(pk=run.source_id).update(url=SCRIPT_URLS[1])
    for url in SCRIPT_URLS:
        attestation = submissions.attestation_create(run=run, kind="note", text="see logs", link="https://example.org/")
        type(attestation).objects.filter(pk=attestation.pk).update(link=url, state="published")
    run.refresh_from_db()

    client.force_login(root)
    pages = [
        run.get_absolute_url(),
        run.source.get_absolute_url(),
        run.benchmark.get_absolute_url(),
        f"/admin/runs/run/{run.pk}/change/",
        f"/admin/runs/source/{run.source_id}/change/",
    ] + [f"/admin/attestations/attestation/{a.pk}/change/" for a in run.attestations.all()]
    for page in pages:
        response = client.get(page)
        if response.status_code == 404 and page.startswith("/admin/runs/source/"):
            continue  # sources have no admin page
        assert response.status_code == 200, page
        html = response.content.decode()
        assert not bad_links(html), (page, bad_links(html))
    # The text is still there for a moderator to read, just not as a link.
    assert "artifact 3" in client.get(run.get_absolute_url()).content.decode()


@pytest.mark.parametrize(
    "native_id", ["../../../admin/auth/user", "./x", "a/../../admin", "%2e%2e/admin", "a//b", "a b"]
)
def test_unsafe_benchmark_ids_are_refused_and_never_become_paths(client: Any, native_id: str, tmp_path: Path) -> None:
    bundle = submitted_bundle()
    bundle["run"]["spec"]["sourceNative"]["benchmark"] = native_id
    path = tmp_path / "b.json"
    path.write_text(json.dumps(bundle))
    with pytest.raises(CommandError, match="sourceNative.benchmark may hold only"):
        call_command("import", str(path), stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert not Benchmark.objects.exists()
    # A row stored before the check links to its source, never to where its dots lead.
    run = Run.objects.get(public_id=import_bundles([submitted_bundle()]).run_ids[0])
    Benchmark.objects.filter(pk=run.benchmark_id).update(native_id=native_id)
    benchmark = Benchmark.objects.select_related("source").get()
    assert benchmark.get_absolute_url() == "/sources/submitted/"
    html = client.get(run.get_absolute_url()).content.decode()
    assert "admin" not in "".join(Links_of(html)), html
    # And the URL pattern does not take such an id.
    assert client.get(f"/benchmarks/submitted/{native_id}/").status_code == 404


def Links_of(html: str) -> list[str]:  # noqa: N802
    parser = Links()
    parser.feed(html)
    return parser.found
