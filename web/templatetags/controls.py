"""The controls around a list, written in Python (``{% load controls %}``): the filter form
(``{% filter_form filters … %}``), the pager (``{% pager page extra %}``) and the download links
(``{% downloads csv_link jsonl_link what %}``), on Django's pages and, under the same names, on
the Jinja pages (web.jinja).

They were the includes ``web/_filters.html``, ``runs/_pager.html`` and ``web/_downloads.html``.
A Jinja page rendered each through Django's template engine (a context, a render, a dozen
variable lookups each trying a key, an attribute and an index): about a tenth of the ranking
page's CPU. Here each is a few format strings over values read once, with Django's escaping,
so the HTML is what the includes wrote; tests/web/test_jinja.py renders both and compares them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from kernelindex.markup import conditional_escape as _text  # {{ value }} as a template writes it

register = template.Library()


def _option(value: str, label: str, chosen: str) -> str:
    selected = " selected" if value == chosen else ""
    return f'<option value="{_text(value)}"{selected}>{_text(label)}</option>'


@register.simple_tag
def filter_form(
    filters: Iterable[Any], sort: str = "", hidden: Iterable[tuple[str, str]] = (), clear: bool = False, path: str = ""
) -> SafeString:
    """A GET form over a view's filters (``web.tables.Filter``s): works without JavaScript, the
    result is a permalink. ``sort`` and ``hidden`` ((name, value) pairs) travel as hidden
    fields; ``clear`` adds a link to ``path`` (the page without its query string)."""
    fields = []
    for f in filters:
        name = _text(f.name)
        options = "".join(_option(value, label, f.value) for value, label in f.options)
        fields.append(
            f'<div class="field"><label for="filter-{name}">{_text(f.label)}</label>\n'
            f'    <select id="filter-{name}" name="{name}">\n'
            f'      <option value="">any</option>\n      {options}\n    </select></div>\n  '
        )
    sort_field = f'<input type="hidden" name="sort" value="{_text(sort)}">' if sort else ""
    kept = "".join(f'<input type="hidden" name="{_text(n)}" value="{_text(v)}">' for n, v in hidden or ())
    clear_link = f' <a href="{_text(path)}">clear filters</a>' if clear else ""
    return mark_safe(
        '\n<form class="filters" method="get" action="">\n  '
        f"{''.join(fields)}{sort_field}\n  {kept}\n"
        f'  <button type="submit">Apply</button>{clear_link}\n</form>\n'
    )


@register.simple_tag
def pager(page: Any, extra: str = "") -> SafeString:
    """Previous and next links under a paginated list (a ``runs.selectors.CappedPaginator``'s
    page), keeping the query string ``extra``; nothing when the list fits one page."""
    paginator = page.paginator
    if not (paginator.num_pages > 1 or paginator.capped):
        return mark_safe("\n")
    query = f"{_text(extra)}&amp;" if extra else ""
    previous = (
        f'<a href="?{query}page={_text(page.previous_page_number())}" rel="prev">← previous</a>'
        if page.has_previous()
        else ""
    )
    following = (
        f'<a href="?{query}page={_text(page.next_page_number())}" rel="next">next →</a>' if page.has_next() else ""
    )
    pages, count = _text(paginator.num_pages), _text(paginator.count)
    if paginator.capped:
        where = f"the first {pages} ({count} rows shown of more; filter to narrow)"
    else:
        where = f"{pages} ({count} rows)"
    return mark_safe(
        f'<nav class="pager" aria-label="Pages">\n{previous}\n<span>page {_text(page.number)} of {where}</span>\n'
        f"{following}\n</nav>\n"
    )


@register.simple_tag
def downloads(csv_link: str, jsonl_link: str, what: str = "") -> SafeString:
    """The CSV and JSONL download links of a view; ``what`` names it ("this view" by default)."""
    return mark_safe(
        f'<p class="downloads">Download {_text(what or "this view")}: <a href="{_text(csv_link)}" download>CSV</a>'
        f' · <a href="{_text(jsonl_link)}" download>JSONL</a></p>\n'
    )
