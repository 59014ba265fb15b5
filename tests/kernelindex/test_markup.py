"""kernelindex.markup.escape writes what html.escape (Django's escaping) writes."""

from __future__ import annotations

import html

import pytest
from django.utils.html import escape as django_escape

from kernelindex.markup import escape

TEXTS = ["", "18.6 µs", "plain", "&", "<b>", 'say "hi"', "O'Neil", "a&b<c>d\"e'f", "&amp;", "→ ◆ ■", "x" * 1000 + "<"]


@pytest.mark.parametrize("text", TEXTS)
def test_it_escapes_as_html_and_django_escape(text: str) -> None:
    assert escape(text) == html.escape(text) == str(django_escape(text))
