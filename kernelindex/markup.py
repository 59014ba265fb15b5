"""Escaping for the pages. ``escape``: ``html.escape`` (Django's escaping: ``&amp; &lt; &gt;
&quot; &#x27;``) that gives most values back as they are; ``conditional_escape``: the same for
anything, markup (``__html__``) left as it is; ``element_text``: the three characters an
element's text needs escaped, for long texts such as the run page's manifest.

The pages write thousands of short values a request (numbers, dates, ids, SVG labels), and
nearly none holds a character to escape. ``html.escape`` runs five ``str.replace`` calls on each
(300 ns for "18.6 µs"); five membership tests first cost half that, and the text is returned
unchanged when none is found. The result is ``html.escape``'s in every case
(tests/kernelindex/test_markup.py).
"""

from __future__ import annotations

from html import escape as _escape

from django.utils.safestring import SafeString, mark_safe


def escape(text: str) -> str:
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return _escape(text)
    return text


def conditional_escape(value: object) -> str:
    """``value`` as Django's ``conditional_escape`` (and ``format_html``, and ``{{ value }}``)
    writes it: markup as it is, anything else as text, escaped; a plain str, not a SafeString."""
    if hasattr(value, "__html__"):
        return value.__html__()
    return escape(str(value))


def element_text(value: str) -> SafeString:
    """``value`` escaped for an element's content (``<pre>``): ``&``, ``<`` and ``>`` only. Quotes
    need escaping in attribute values, not in text, and a manifest holds some 1,600 of them:
    Django's escape (five passes, each quote six characters longer) took 120 µs of a run page,
    this 40 µs."""
    if "&" in value:
        value = value.replace("&", "&amp;")
    if "<" in value:
        value = value.replace("<", "&lt;")
    if ">" in value:
        value = value.replace(">", "&gt;")
    return mark_safe(value)
