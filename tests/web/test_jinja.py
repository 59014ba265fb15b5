"""The run page is a Jinja2 template (web.jinja): it writes values, escapes and filters as the
Django template it replaced did, and the fragments Django's pages share with it (a digest field,
a table of cases) write what their Django includes wrote."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.template import Context, Template
from django.test import override_settings

from tests.factories import import_bundles, reference_bundle
from web import jinja


def _jinja(source: str, **context: object) -> str:
    return jinja.environment().from_string(source).render(context)


def _django(source: str, **context: object) -> str:
    return Template(source).render(Context(context))


VALUES = {
    "text": '<b>"Ann" & O\'Neil</b>',
    "integer": 1234567,
    "real": 0.1 + 0.2,
    "tiny": 1e-07,
    "decimal": Decimal("1.50"),
    "none": None,
    "yes": True,
    "when": datetime(2026, 7, 24, 2, 49, tzinfo=UTC),
    "items": [1, 2],
    "mapping": {"a": 1},
}


@override_settings(TIME_ZONE="UTC", USE_THOUSAND_SEPARATOR=False)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_a_value_is_written_and_escaped_as_django_writes_it(name: str) -> None:
    assert _jinja("[{{ value }}]", value=VALUES[name]) == _django("[{{ value }}]", value=VALUES[name])


def test_a_missing_name_key_or_attribute_is_empty_and_safe_text_is_not_escaped_again() -> None:
    assert _jinja("[{{ nothing }}|{{ nothing.deeper['key'] }}|{{ d['absent'] }}]", d={}) == "[||]"
    from django.utils.safestring import mark_safe

    assert _jinja("{{ html }}", html=mark_safe("<em>x</em>")) == "<em>x</em>"


def test_every_written_value_is_escaped_whatever_the_expression() -> None:
    """web.jinja escapes in ``_finalize`` with Jinja's autoescape off: whatever computes the value
    (an attribute, a key, a filter, a conditional, a loop), what it writes is escaped once."""
    hostile = "<b>\"x\" & 'y'</b>"
    escaped = "&lt;b&gt;&quot;x&quot; &amp; &#x27;y&#x27;&lt;/b&gt;"
    for source in (
        "{{ v }}",
        "{{ o.v }}",
        "{{ o['v'] }}",
        "{{ v|capfirst }}",
        "{{ v if yes else '' }}",
        "{% for x in [v] %}{{ x }}{% endfor %}",
        "{{ none|default(v) }}",
    ):
        assert _jinja(source, v=hostile, o={"v": hostile}, yes=True, none=None) == escaped, source
    assert _jinja("{{ v|join(', ') }}", v=[hostile, hostile]) == f"{escaped}, {escaped}"
    assert _jinja("{{ '<i>'|safe }}{{ v|linebreaksbr }}", v="a<\nb") == "<i>a&lt;<br>b"


def test_the_templates_join_no_text_outside_finalize() -> None:
    """The constructs that would join text after _finalize has escaped it, or escape it again,
    are not used by the Jinja pages (see web.jinja): a template that needs one must turn Jinja's
    autoescape back on first."""
    for template in jinja.FOLDER.rglob("*.html"):
        text = template.read_text()
        code = " ".join(re.findall(r"\{\{.*?\}\}|\{%.*?%\}", text, re.S))
        assert "~" not in code, template
        for tag in ("macro", "call", "filter", "autoescape"):
            assert not re.search(r"\{%-?\s*" + tag + r"\b", code), (template, tag)
        assert not re.search(r"\{%-?\s*set\s+\w+\s*-?%\}", code), template  # a {% set %} block


@pytest.mark.parametrize(
    ("django", "jinja_source", "value"),
    [
        ('{{ v|default:"—" }}', '{{ v|default("—") }}', ""),
        ('{{ v|default:"—" }}', '{{ v|default("—") }}', 0),
        ("{{ v|pluralize }}", "{{ v|pluralize }}", 2),
        ('{{ v|pluralize:"es" }}', '{{ v|pluralize("es") }}', 1),
        ("{{ v|capfirst }}", "{{ v|capfirst }}", "exploit <x>"),
        ("{{ v|truncatechars:10 }}", "{{ v|truncatechars(10) }}", "a long & winding summary"),
        ("{{ v|linebreaksbr }}", "{{ v|linebreaksbr }}", "one <b>\ntwo"),
        ('{{ v|cut:"NVIDIA " }}', '{{ v|cut("NVIDIA ") }}', "NVIDIA <H200>"),
        ('{{ v|join:", " }}', '{{ v|join(", ") }}', ["a&b", "<c>"]),
        ("{{ v|urlencode }}", "{{ v|urlencode }}", "level1/19_ReLU & 'x'"),
        ("{% load kiformat %}{{ v|latency }}", "{{ v|latency }}", 18583.0),
        ("{% load kiformat %}{{ v|shortdigest:23 }}", "{{ v|shortdigest(23) }}", "sha256:" + "ab" * 32),
    ],
)
def test_filters_mean_what_they_meant_in_django(django: str, jinja_source: str, value: object) -> None:
    assert _jinja(jinja_source, v=value) == _django(django, v=value)


# templates/runs/_digest.html before it became kiformat.digest_field.
DIGEST_INCLUDE = (
    '{% load kiformat %}<span class="digest-field">{% if link %}<a href="{{ link }}" title="{{ value }}"><code>'
    '{{ value|shortdigest:length }}</code></a>{% else %}<code title="{{ value }}">{{ value|shortdigest:length }}'
    '</code>{% endif %}<label class="visually-hidden" for="copy-{{ id }}">Full value</label><input class="copy" '
    'id="copy-{{ id }}" type="text" readonly value="{{ value }}" aria-label="full {{ id }} digest, select to copy">'
    "</span>"
)


@pytest.mark.parametrize("link", ["", "/groups/sha256:ab/?a=1&b=2"])
def test_the_digest_field_writes_what_its_include_wrote(link: str) -> None:
    value = 'sha256:<"quoted">' + "0f" * 30
    expected = _django(DIGEST_INCLUDE, value=value, length=16, id="key", link=link)
    assert _django('{% load kiformat %}{% digest_field v 16 "key" link %}', v=value, link=link) == expected
    assert _jinja('{{ digest_field(v, 16, "key", link) }}', v=value, link=link) == expected


# templates/runs/_cases.html (without its rows, which tests/web/test_run_rows.py compares) before
# it became runrows.cases_table.
CASES_INCLUDE = (
    '{% load runrows %}{% with cols=table.columns %}<div class="table-wrap table-scroll" tabindex="0" role="region" '
    'aria-label="{{ caption }}">\n<table class="cases">\n  <caption>{{ caption }}</caption>\n  <thead><tr>'
    '<th scope="col">#</th>{% if cols.latency %}<th scope="col" class="num">latency</th>{% endif %}'
    '{% if cols.baseline %}<th scope="col" class="num">scoring baseline</th>{% endif %}'
    '{% if cols.sol %}<th scope="col" class="num">speed of light</th>{% endif %}'
    '{% if cols.speedup %}<th scope="col" class="num">× reference</th>{% endif %}'
    '{% if cols.score %}<th scope="col" class="num">SOL score</th>{% endif %}'
    '{% if cols.timer %}<th scope="col">timer</th>{% endif %}{% if cols.status %}<th scope="col">status</th>'
    '{% endif %}<th scope="col">axes</th></tr></thead>\n  <tbody>\n  {% case_rows table %}\n  </tbody>\n</table>\n'
    "</div>{% endwith %}\n"
)


def test_the_cases_table_writes_what_its_include_wrote() -> None:
    from web import figures
    from web.pages import CaseRow

    cases = [
        CaseRow(1, "#1", {"batch": 4}, 18600.0, 25800.0, 9000.0, 0.93, "passed", "cuda events"),
        CaseRow(2, "#2", {}, None, 25800.0, None, None, "failed", "", "mismatch"),
    ]
    for chosen in (cases, cases[1:], []):
        table = figures.run_figures(chosen)
        for caption in ("Cases of the workload", "the benchmark's <cases>"):
            expected = _django(CASES_INCLUDE, table=table, caption=caption)
            assert _django("{% load runrows %}{% cases_table t c %}", t=table, c=caption) == expected
            assert _jinja("{{ cases_table(t, c) }}", t=table, c=caption) == expected


@pytest.mark.django_db
def test_the_run_page_is_the_site_frame_with_the_jinja_blocks(client) -> None:
    from runs.models import Run

    import_bundles([reference_bundle()])
    run = Run.objects.get()
    body = client.get(run.get_absolute_url()).content.decode()
    assert body.startswith("<!doctype html>") and body.rstrip().endswith("</html>")
    assert f"<title>Run {run.public_id} · KernelIndex</title>" in body
    assert f'<link rel="alternate" type="application/json" href="{run.get_json_url()}">' in body
    assert re.search(r'<main id="content">\s*<article class="run">', body)
    assert '<p class="run-footer">' in body and body.count("<footer") == 1
    # The search box and navigation come from base.html, as on every page.
    assert 'action="/search/"' in body and 'href="/api/v1/"' in body


@pytest.mark.django_db
def test_the_frame_rendered_once_is_base_html_for_any_visitor(rf, django_user_model) -> None:
    """web.jinja.frame renders base.html once per process: that is right only while base.html
    writes the same for every request. A frame that named the user, a message or the path
    would show one visitor's page to another; this fails first."""
    from django.contrib.messages.storage.fallback import FallbackStorage
    from django.contrib.sessions.backends.db import SessionStore
    from django.shortcuts import render
    from django.utils.safestring import mark_safe

    moderator = django_user_model.objects.create_user("mod", password="unused-password-7", is_staff=True)
    anonymous = rf.get("/runs/abc/")
    signed_in = rf.get("/groups/sha256:00/?q=cuda&page=2")
    signed_in.user, signed_in.session = moderator, SessionStore()
    signed_in._messages = FallbackStorage(signed_in)
    signed_in._messages.add(25, "Saved <b>it</b>")
    from django.contrib.auth.models import AnonymousUser

    anonymous.user = AnonymousUser()
    blocks = {name: mark_safe(f"[{name}]") for name in jinja.BLOCKS}
    pieces = jinja.frame()
    expected = "".join(p + (f"[{name}]" if name else "") for p, name in zip(pieces, (*jinja.BLOCKS, ""), strict=True))
    for request in (anonymous, signed_in):
        assert render(request, "jinja_page.html", {"blocks": blocks}).content.decode() == expected
    assert len(pieces) == len(jinja.BLOCKS) + 1 and pieces[0].startswith("<!doctype html>")


# templates/web/_filters.html, runs/_pager.html and web/_downloads.html before they became
# web.templatetags.controls: what each include wrote, the tag and the Jinja global write.
FILTERS_INCLUDE = (
    "{# A GET form over the view's filters: works without JavaScript, the result is a permalink. #}\n"
    '<form class="filters" method="get" action="">\n  {% for f in filters %}<div class="field"><label '
    'for="filter-{{ f.name }}">{{ f.label }}</label>\n    <select id="filter-{{ f.name }}" name="{{ f.name }}">\n'
    '      <option value="">any</option>\n      {% for value, label in f.options %}<option value="{{ value }}"'
    "{% if value == f.value %} selected{% endif %}>{{ label }}</option>{% endfor %}\n    </select></div>\n"
    '  {% endfor %}{% if sort %}<input type="hidden" name="sort" value="{{ sort }}">{% endif %}\n'
    '  {% for name, value in hidden %}<input type="hidden" name="{{ name }}" value="{{ value }}">{% endfor %}\n'
    '  <button type="submit">Apply</button>{% if clear %} <a href="{{ request.path }}">clear filters</a>'
    "{% endif %}\n</form>\n"
)
PAGER_INCLUDE = (
    '{% if page.paginator.num_pages > 1 or page.paginator.capped %}<nav class="pager" aria-label="Pages">\n'
    '{% if page.has_previous %}<a href="?{% if extra %}{{ extra }}&amp;{% endif %}page='
    '{{ page.previous_page_number }}" rel="prev">← previous</a>{% endif %}\n<span>page {{ page.number }} of '
    "{% if page.paginator.capped %}the first {{ page.paginator.num_pages }} ({{ page.paginator.count }} rows "
    "shown of more; filter to narrow){% else %}{{ page.paginator.num_pages }} ({{ page.paginator.count }} rows)"
    '{% endif %}</span>\n{% if page.has_next %}<a href="?{% if extra %}{{ extra }}&amp;{% endif %}page='
    '{{ page.next_page_number }}" rel="next">next →</a>{% endif %}\n</nav>{% endif %}\n'
)
DOWNLOADS_INCLUDE = (
    '<p class="downloads">Download {{ what|default:"this view" }}: <a href="{{ csv_link }}" download>CSV</a> · '
    '<a href="{{ jsonl_link }}" download>JSONL</a></p>\n'
)


def test_the_filter_form_writes_what_its_include_wrote() -> None:
    from django.test import RequestFactory

    from web.tables import Filter

    request = RequestFactory().get("/runs/a&b/?gpu=h200")
    filters = [
        Filter("gpu", "GPU", [("h200", "NVIDIA H200"), ("b<200>", 'B"200"')], "h200"),
        Filter("source", "source", [("a&b", "A & B")]),
    ]
    for chosen in (filters, []):
        for sort, hidden, clear in (("", [], False), ("-latency", [("show", "all"), ("q", "<x>")], True)):
            expected = _django(FILTERS_INCLUDE, filters=chosen, sort=sort, hidden=hidden, clear=clear, request=request)
            assert (
                _django(
                    "{% load controls %}{% filter_form f sort=s hidden=h clear=c path=request.path %}",
                    f=chosen,
                    s=sort,
                    h=hidden,
                    c=clear,
                    request=request,
                )
                == expected
            )
            assert _jinja("{{ filter_form(f, s, h, c, p) }}", f=chosen, s=sort, h=hidden, c=clear, p=request.path) == (
                expected
            )


def test_the_pager_and_the_downloads_write_what_their_includes_wrote() -> None:
    from runs.selectors import CappedPaginator

    class Small(CappedPaginator):
        cap = 120

    for rows in (3, 60, 120, 121, 500):
        paginator = Small(list(range(rows)), 50, known_count=rows)
        for number in range(1, paginator.num_pages + 1):
            page = paginator.page(number)
            for extra in ("", "gpu=h200&sort=-latency", "q=<a>"):
                expected = _django(PAGER_INCLUDE, page=page, extra=extra)
                assert _django("{% load controls %}{% pager p e %}", p=page, e=extra) == expected
                assert _jinja("{{ pager(p, e) }}", p=page, e=extra) == expected
    for what in ("", "these <runs>"):
        links = {"csv_link": "/runs/?format=csv&a=1", "jsonl_link": '/runs/?format=jsonl&q="x"'}
        expected = _django(DOWNLOADS_INCLUDE, what=what, **links)
        assert _django("{% load controls %}{% downloads csv_link jsonl_link w %}", w=what, **links) == expected
        assert _jinja("{{ downloads(csv_link, jsonl_link, w) }}", w=what, **links) == expected
