"""Helpers for reading rendered pages in tests: visible text, one element's text."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _Text(HTMLParser):
    SKIP = {"script", "style", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIP:
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def visible_text(html: str) -> str:
    """The page's text as a reader sees it (the <title> first), whitespace collapsed."""
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.title + parser.parts).split())


def squash(text: str) -> str:
    """Text without any whitespace: the reference page's text lost the spaces between
    elements ("18.6µsmean"), so fields are compared this way."""
    return re.sub(r"\s+", "", text)
