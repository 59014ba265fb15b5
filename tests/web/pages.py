"""Helpers for reading rendered pages in tests: visible text, one element's text."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _Text(HTMLParser):
    HIDDEN = {"script", "style", "head", "svg"}  # not read as page text (charts: their table is)

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.stack: list[str] = []
        self.glue = False  # after a <wbr>: the next text continues the word, no space

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.HIDDEN or tag == "title":
            self.stack.append(tag)
        self.glue = tag == "wbr"

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack == ["head", "title"]:
            self.title.append(data)
        elif not self.stack:
            if self.glue and self.parts:
                self.parts[-1] += data
            else:
                self.parts.append(data)
        self.glue = False


def visible_text(html: str) -> str:
    """The page's text as a reader sees it (the <title> first, charts left out), whitespace
    collapsed."""
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.title + parser.parts).split())


def squash(text: str) -> str:
    """Text without any whitespace: the reference page's text lost the spaces between
    elements ("18.6µsmean"), so fields are compared this way."""
    return re.sub(r"\s+", "", text)
