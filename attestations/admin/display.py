"""How the admin shows a URL someone else stored: a link only when it is http(s)
(``kernelindex.links``, the rule every page uses), otherwise the text. Django's own read-only
URL display links anything its URLValidator accepts (ftp:, for one)."""

from __future__ import annotations

from django.utils.html import format_html

from kernelindex import links


def stored_link(url: str) -> str:
    if not url:
        return "—"
    if links.is_http_url(url):
        return format_html('<a href="{}" rel="nofollow noopener noreferrer">{}</a>', url, url)
    return format_html("<code>{}</code> (not an http(s) URL: not linked)", url)
