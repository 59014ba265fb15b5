"""Browsers fetch /favicon.ico on every site whatever the page says; it must not be a 404 in
their console. Every page names the SVG icon, and /favicon.ico sends browsers to it."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.test import Client


@pytest.mark.django_db
def test_favicon_ico_redirects_to_the_icon_that_pages_name() -> None:
    client = Client()
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == static("kernelindex/favicon.svg")
    page = client.get("/").content.decode()
    assert f'<link rel="icon" href="{static("kernelindex/favicon.svg")}" type="image/svg+xml">' in page


def test_the_icon_is_a_static_svg() -> None:
    path = finders.find("kernelindex/favicon.svg")
    assert path is not None
    with open(path, encoding="utf-8") as handle:
        icon = handle.read()
    assert icon.startswith("<svg ") and 'viewBox="0 0 32 32"' in icon
