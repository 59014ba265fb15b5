"""``escape``: ``html.escape`` (Django's escaping: ``&amp; &lt; &gt; &quot; &#x27;``) that gives
most values back as they are.

The pages write thousands of short values a request (numbers, dates, ids, SVG labels), and
nearly none holds a character to escape. ``html.escape`` runs five ``str.replace`` calls on each
(300 ns for "18.6 µs"); five membership tests first cost half that, and the text is returned
unchanged when none is found. The result is ``html.escape``'s in every case
(tests/kernelindex/test_markup.py).
"""

from __future__ import annotations

from html import escape as _escape


def escape(text: str) -> str:
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return _escape(text)
    return text
