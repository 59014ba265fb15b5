"""Pages rendered by Jinja2 inside the site's Django base template (``render_page``): the pages
whose templates cost the most (the run page, the ranking, the benchmark page, the benchmark
across GPUs and the benchmarks index).

The run page's Django template cost more than everything else the page does: 2.7 ms of a
5.6 ms request in-process on the shipped data, for some 220 variable lookups (each tries a
dictionary key, an attribute and a list index, catching the failures) and 200 nodes. Jinja2
compiles a template into a Python function once per process; the same page renders in a
fraction of that. Templates under ``templates/jinja/`` fill the blocks of ``base.html``
(title, head, content, footer); ``templates/jinja_page.html`` (Django) puts them into
``base.html``, so the site's frame stays one template and its context processors still run.

What the Django templates did, these do too: a value is escaped unless it is safe (Django's
SafeString and markupsafe's Markup both have ``__html__``), a missing name, key or attribute
renders as "" (``ChainableUndefined``), a value is written as Django writes it (``_finalize``:
numbers localised, dates in the current time zone), and the filters are the site's own
(``kiformat``, ``ranks``) and Django's, under their names.

The escaping is ``_finalize``'s, applied to every ``{{ … }}``; Jinja's own autoescape is off.
With it on, Jinja passed what ``_finalize`` had escaped through markupsafe's ``escape`` again,
which found ``__html__`` and wrapped the text in a new Markup: two Python calls and a copy for
each of a page's 130 values, 3% of a run page. That is safe here because nothing in these
templates joins text without ``_finalize`` seeing the result: no ``~``, no macros, no
``{% set %}`` blocks, and the filters that join (Django's ``join``, ``linebreaksbr``) escape
themselves (tests/web/test_jinja.py holds every construct the templates use).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse
from django.template import defaultfilters
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.formats import localize
from django.utils.safestring import mark_safe
from django.utils.timezone import template_localtime
from jinja2 import ChainableUndefined, Environment, FileSystemLoader

from kernelindex.markup import escape
from web.templatetags import controls, kiformat, ranks, runrows

FOLDER = settings.BASE_DIR / "templates" / "jinja"
# Django's filters the Jinja pages use, with Django's meaning ("default" replaces any false value).
DJANGO_FILTERS = ("capfirst", "cut", "default", "join", "linebreaksbr", "pluralize", "truncatechars", "urlencode")


def _finalize(value: Any) -> str:
    """A value as Django's templates write it (``render_value_in_context``), escaped as Django
    escapes (``&quot;`` and ``&#x27;``, where markupsafe writes ``&#34;`` and ``&#39;``)."""
    if hasattr(value, "__html__"):
        return value.__html__()
    if value.__class__ is int and not settings.USE_THOUSAND_SEPARATOR:
        return str(value)  # what localize() gives an int, without its number formatting
    if value.__class__ is not str:
        value = str(localize(template_localtime(value)))
    return escape(value)  # django.utils.html.escape without its lazy-text wrapper


def url(name: str, *args: Any) -> str:
    """``{% url name arg… %}``: the path of a named URL."""
    return reverse(name, args=args)


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(FOLDER),
        autoescape=False,  # _finalize escapes (see above)
        undefined=ChainableUndefined,
        finalize=_finalize,
        keep_trailing_newline=True,
        auto_reload=settings.DEBUG,
    )
    env.filters.update(kiformat.register.filters)
    env.filters.update(ranks.register.filters)
    env.filters.update(
        {name: defaultfilters.register.filters[name] for name in DJANGO_FILTERS},
    )
    env.globals.update(
        cases_table=runrows.cases_table,
        digest_field=kiformat.digest_field,
        downloads=controls.downloads,
        filter_form=controls.filter_form,
        pager=controls.pager,
        ranking_rows=runrows.ranking_rows,
        history_table=runrows.history_table,
        url=url,
    )
    return env


def precompile() -> list[str]:
    """Compile every template under ``templates/jinja/`` and render the frame now
    (gunicorn.conf.py's when_ready): the run page's took 75 ms to compile, once per process.
    Returns the templates' names."""
    env = environment()
    names = env.list_templates()
    for name in names:
        env.get_template(name)
    _cached_frame()
    return names


BLOCKS = ("title", "head", "content", "footer")


def frame() -> list[str]:
    """``base.html`` around the blocks of a Jinja page: the text before the first block, between
    each two, and after the last, with the blocks in the order of ``BLOCKS`` in between.

    The frame names no request, user or message (tests/web/test_jinja.py checks that it renders
    the same for an anonymous visitor and a signed-in moderator), so it is rendered once per
    process, not once per page: rendering it with Django cost a tenth of a run page."""
    marks = {name: f"\x00{name}\x00" for name in BLOCKS}
    html = render_to_string("jinja_page.html", {"blocks": {name: mark_safe(mark) for name, mark in marks.items()}})
    positions = sorted((html.index(mark), name) for name, mark in marks.items())
    if [name for _, name in positions] != list(BLOCKS) or any(html.count(mark) != 1 for mark in marks.values()):
        raise ImproperlyConfigured(f"base.html must hold each of the blocks {BLOCKS} once, in that order")
    pieces, start = [], 0
    for position, name in positions:
        pieces.append(html[start:position])
        start = position + len(marks[name])
    pieces.append(html[start:])
    return pieces


_cached_frame = cache(frame)


def render_page(request: HttpRequest, name: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """The Jinja template ``name``'s blocks, rendered with ``context``, in ``base.html``."""
    template = environment().get_template(name)
    shared = template.new_context({**context, "request": request})
    pieces = frame() if settings.DEBUG else _cached_frame()  # DEBUG: base.html may have changed
    body = [pieces[0]]
    for block, after in zip(BLOCKS, pieces[1:], strict=True):
        render = template.blocks.get(block)
        if render is not None:
            body.extend(render(shared))
        body.append(after)
    return HttpResponse("".join(body), status=status)
