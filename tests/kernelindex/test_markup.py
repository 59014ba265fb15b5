"""kernelindex.markup: escape and conditional_escape write what Django writes; element_text
escapes what an element's text needs and reads back."""

from __future__ import annotations

import html

import pytest
from django.utils.html import escape as django_escape

from kernelindex.markup import element_text, escape

TEXTS = ["", "18.6 µs", "plain", "&", "<b>", 'say "hi"', "O'Neil", "a&b<c>d\"e'f", "&amp;", "→ ◆ ■", "x" * 1000 + "<"]


@pytest.mark.parametrize("text", TEXTS)
def test_it_escapes_as_html_and_django_escape(text: str) -> None:
    assert escape(text) == html.escape(text) == str(django_escape(text))


@pytest.mark.parametrize("text", ['{"a": "<script>alert(\'x\')</script> & >"}', "plain", "", "&amp;<<>>"])
def test_element_text_escapes_what_an_element_needs_and_reads_back(text: str) -> None:
    from django.utils.safestring import SafeString

    written = element_text(text)
    assert isinstance(written, SafeString)
    assert (
        "<" not in written
        and ">" not in written
        and "&" not in written.replace("&amp;", "").replace("&lt;", "").replace("&gt;", "")
    )
    assert html.unescape(written) == text
    assert written.count('"') == text.count('"')  # quotes stay as they are: no attribute here


@pytest.mark.parametrize("value", [*TEXTS, None, 3, 2.5])
def test_conditional_escape_writes_what_djangos_writes(value: object) -> None:
    from django.utils.html import conditional_escape as django_conditional_escape
    from django.utils.safestring import mark_safe

    from kernelindex.markup import conditional_escape

    assert conditional_escape(value) == str(django_conditional_escape(value))
    if isinstance(value, str):
        assert conditional_escape(mark_safe(value)) == value  # markup stays as it is
