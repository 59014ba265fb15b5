"""``{% run_rows %}`` writes what the template loop it replaced wrote, escaping included."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template

from runs.models import Run
from tests.factories import import_bundles, sol_bundle, sol_group

# The loop of templates/runs/_run_rows.html (gpu="run") and web/_run_table.html (gpu="group")
# before the rows were written in Python.
LOOP = (
    "{% load kiformat ranks %}{% for r in runs %}\n"
    '  <tr><th scope="row" class="id"><a href="{{ r.get_absolute_url }}">{{ r.public_id }}</a></th>'
    '<td class="num">{{ r.latency_ns|latency }} <span class="small">{{ r.primary_statistic }}</span></td>'
    '<td class="num rank">{{ r|rank_of }}</td>'
    '<td class="name"><a href="{{ r.benchmark.get_absolute_url }}">{{ r.benchmark.title }}</a></td>'
    '<td class="who">{{ r|submitter }}</td>'
    '<td><a href="{{ r.group.get_absolute_url }}">'
    '{% if gpu == "run" %}{{ r.environment.product }} · {{ r.protocol.harness_label }}'
    "{% else %}{{ r.group.hardware_product }} · {{ r.group.harness_label }}{% endif %}</a></td>"
    '<td class="num">{{ r.sol_score|score }}</td><td class="date">{{ r.observed_at|isodate }}</td>'
    '<td><span class="badge evidence-{{ r.evidence_level }}">{{ r.get_evidence_level_display }}</span></td></tr>\n'
    '  {% empty %}\n  <tr><td colspan="9">{{ empty }}</td></tr>\n  {% endfor %}'
)

ROWS = "{% load runrows %}{% run_rows runs gpu=gpu empty=empty %}"


def _squeeze(html: str) -> str:
    return re.sub(r">\s+<", "><", html.strip())


@pytest.mark.django_db
@pytest.mark.parametrize("gpu", ["run", "group"])
def test_run_rows_write_what_the_template_loop_wrote(gpu: str) -> None:
    sol_group(4)
    # A submitter name and a failed run that a template must escape and label.
    import_bundles(
        [
            sol_bundle(
                submission_id=100900,
                username='<b>"Ann" & O\'Neil</b> | team',
                status="failed",
                sol_score=0.5,
                latency_ms=0.03,
            )
        ]
    )
    runs = list(Run.objects.for_listing().order_by("public_id"))
    assert len(runs) == 5
    for chosen in (runs, []):
        context = {"runs": chosen, "gpu": gpu, "empty": "No runs <yet>."}
        expected = Template(LOOP).render(Context(context))
        written = Template(ROWS).render(Context(context))
        assert _squeeze(written) == _squeeze(expected)
    written = Template(ROWS).render(Context({"runs": runs, "gpu": gpu, "empty": ""}))
    assert "&lt;b&gt;&quot;Ann&quot; &amp; O&#x27;Neil&lt;/b&gt;" in written
    assert "<b>" not in written


# The loop of templates/runs/group_detail.html before its rows were written in Python.
RANKING_LOOP = (
    "{% load kiformat ranks %}{% for r in rows %}\n"
    '  <tr class="{% if r.is_reference %}reference{% elif not r.eligible or not r.rank %}ineligible{% endif %}">\n'
    '    <th scope="row" class="num rank">{% if r.rank %}{{ r|rank_of }}{% elif r.is_reference %}'
    '<span class="badge">reference</span>{% else %}<span class="small">unranked{% if r.quarantined %} (quarantined)'
    '{% elif r.status != "passed" %} ({{ r.get_status_display }}){% elif r.eligible %} (not their best){% endif %}'
    "</span>{% endif %}</th>\n"
    '    <td class="id"><a href="{{ r.get_absolute_url }}">{{ r.public_id }}</a>{% if r.public_flags %} '
    '<a class="badge flagged" href="{{ r.get_absolute_url }}#replications" title="Flagged by moderators">⚑</a>'
    "{% endif %}</td>\n"
    '    {% if cols.sol %}<td class="num">{{ r.sol_score|score }}</td>{% endif %}\n'
    '    <td class="num">{{ r.latency_ns|latency }}</td>\n'
    '    {% if cols.speedup %}<td class="num">{{ r.avg_speedup|ratio }}</td>{% endif %}\n'
    '    {% if cols.fast %}<td class="num">{% if r.fast_1_total %}{{ r.fast_1_count }}/{{ r.fast_1_total }}'
    "{% else %}—{% endif %}</td>{% endif %}\n"
    '    <td class="who">{{ r|submitter }}{% for flag in r.public_flags %}<p class="flag-note small">'
    '<a class="badge flagged" href="{{ r.get_absolute_url }}#replications">⚑ flagged</a> '
    "{{ flag.get_category_display|capfirst }}: {{ flag.public_summary|truncatechars:160 }}</p>{% endfor %}</td>\n"
    '    <td>{% if r.implementation.project %}<a href="{{ r.implementation.project.get_absolute_url }}">'
    "{{ r.implementation.project.name }}</a>{% else %}—{% endif %}</td>\n"
    '    <td class="date">{{ r.observed_at|isodate }}</td>\n'
    '    <td><span class="badge evidence-{{ r.evidence_level }}">{{ r.get_evidence_level_display }}</span></td>\n'
    "  </tr>\n"
    '  {% empty %}\n  <tr><td colspan="10">No runs in this group yet.</td></tr>\n  {% endfor %}'
)

# The loop of templates/runs/_cases.html before its rows were written in Python.
CASES_LOOP = (
    "{% load kiformat %}{% with cols=table.columns %}{% for row in table.rows %}{% with c=row.case %}\n"
    '  <tr><th scope="row" class="num">{{ c.index }}</th>'
    '{% if cols.latency %}<td class="num">{{ c.latency_ns|latency }}</td>{% endif %}'
    '{% if cols.baseline %}<td class="num">{{ c.baseline_ns|latency }}</td>{% endif %}'
    '{% if cols.sol %}<td class="num">{{ c.sol_ns|latency }}</td>{% endif %}'
    '{% if cols.speedup %}<td class="num">{{ row.speedup|ratio }}</td>{% endif %}'
    '{% if cols.score %}<td class="num">{{ c.score|score }}</td>{% endif %}'
    '{% if cols.timer %}<td>{{ c.timer|default:"—" }}</td>{% endif %}'
    '{% if cols.status %}<td>{{ c.status|default:"—" }}{% if c.detail %} <span class="small">{{ c.detail }}</span>'
    "{% endif %}</td>{% endif %}"
    '<td class="axes">{% for k, v in c.axes.items %}<span>{{ k }}={{ v|plain }}</span>{% if not forloop.last %} '
    "{% endif %}{% empty %}—{% endfor %}</td></tr>\n"
    "  {% endwith %}{% endfor %}{% endwith %}"
)


@pytest.mark.django_db
def test_ranking_rows_write_what_the_template_loop_wrote() -> None:
    from attestations.models import IssueReport, ReportState
    from runs import selectors
    from web import figures, pages

    sol_group(3)
    import_bundles(
        [
            sol_bundle(
                submission_id=100900, username='<b>"Ann"</b> & co', status="failed", sol_score=0.5, latency_ms=0.03
            ),
            sol_bundle(submission_id=100901, username="SOL Bound", sol_score=1.0, latency_ms=0.01, reference=True),
            # A second, slower run of a ranked submitter: eligible, not their best.
            sol_bundle(submission_id=100902, username="submitter 0 | team", sol_score=0.1, latency_ms=0.09),
        ]
    )
    Run.objects.filter(external_id="100002").update(quarantined=True, rank=None)
    flagged = Run.objects.get(external_id="100001")
    for n, summary in enumerate(["<script>x</script> " + "long " * 60, "second flag"]):
        IssueReport.objects.create(
            run=flagged, reference=f"R-ROWS-{n}", category="exploit", description="private",
            state=ReportState.FLAGGED, public_summary=summary,
        )  # fmt: skip
    group = flagged.group
    rows = selectors.attach_group(list(selectors.ranking_rows(group, show_all=True)), group)
    pages.attach_public_flags(rows, group)
    assert len(rows) == 6
    assert {"reference", "ineligible", ""} <= {
        "reference" if r.is_reference else "" if r.rank else "ineligible" for r in rows
    }
    for cols in (figures.run_columns(rows), {"sol": False, "speedup": False, "fast": False}):
        for chosen in (rows, []):
            context = {"rows": chosen, "cols": cols}
            expected = Template(RANKING_LOOP).render(Context(context))
            written = Template("{% load runrows %}{% ranking_rows rows cols %}").render(Context(context))
            assert _squeeze(written) == _squeeze(expected)
    written = Template("{% load runrows %}{% ranking_rows rows cols %}").render(Context({"rows": rows, "cols": {}}))
    assert "&lt;script&gt;" in written and "<script>" not in written
    assert "(quarantined)" in written and "(not their best)" in written and "reference</span>" in written
    assert written.count("⚑ flagged") == 2


@pytest.mark.django_db
def test_case_rows_write_what_the_template_loop_wrote() -> None:
    from web import figures
    from web.pages import CaseRow

    cases = [
        CaseRow(
            1, "#1", {"batch": 4, "<dim>": "a&b", "scale": 2.0}, 18600.0, 25800.0, 9000.0, 0.93, "passed", "cuda events"
        ),
        CaseRow(2, "#2", {}, None, 25800.0, None, None, "failed", "", 'mismatch at "x" <1e-3>'),
        CaseRow("3", "#3", {"flag": True, "none": None}, 123456789.0, None, 1.5, 0.0, "", "", ""),
    ]
    for chosen in (cases, cases[1:2], []):
        table = figures.run_figures(chosen)
        expected = Template(CASES_LOOP).render(Context({"table": table}))
        written = Template("{% load runrows %}{% case_rows table %}").render(Context({"table": table}))
        assert _squeeze(written) == _squeeze(expected)
    written = Template("{% load runrows %}{% case_rows table %}").render(Context({"table": figures.run_figures(cases)}))
    assert "&lt;dim&gt;=a&amp;b" in written and "&quot;x&quot; &lt;1e-3&gt;" in written


# templates/runs/_history.html before it was written in Python (runrows.history_table).
HISTORY_INCLUDE = (
    '<section id="history" aria-labelledby="history-h">\n<h2 id="history-h">History</h2>\n{% if history %}\n'
    '<div class="table-wrap" tabindex="0" role="region" aria-label="History">\n<table class="history">\n'
    "  <caption>{{ caption }}{% if total and total > history|length %} (the latest {{ history|length }} of "
    "{{ total }}){% endif %}</caption>\n"
    '  <thead><tr>{% if with_run %}<th scope="col">run</th>{% endif %}<th scope="col" class="num">revision</th>'
    '<th scope="col">date</th><th scope="col">by</th><th scope="col">reason</th><th scope="col">changed</th>'
    "</tr></thead>\n  <tbody>\n"
    '  {% for h in history %}<tr>{% if with_run %}<td><a href="{{ h.run.get_absolute_url }}">{{ h.run.public_id }}'
    '</a></td>{% endif %}<th scope="row" class="num" title="record digest {{ h.digest }}">{{ h.number }}</th>'
    '<td class="date">{{ h.created_at|isodate }}</td><td>{{ h.actor }}</td><td>{{ h.reason }}</td><td>'
    '{% if h.changed %}{{ h.changed|join:", " }}{% elif h.number == 1 %}first recorded{% else %}—{% endif %}'
    "</td></tr>\n  {% endfor %}\n  </tbody>\n</table>\n</div>\n{% else %}\n<p>No recorded changes.</p>\n"
    "{% endif %}\n</section>\n"
)


@pytest.mark.django_db
def test_the_history_table_writes_what_its_include_wrote() -> None:
    from datetime import UTC, datetime

    from web.pages import HistoryRow

    sol_group(1)
    run = Run.objects.get()
    when = datetime(2026, 7, 24, 2, 49, tzinfo=UTC)
    rows = [
        HistoryRow(3, when, 'api: <b>"Ann"</b>', "re-imported & 'fixed'", ["latency_ns", "<title>"], "sha256:ab", run),
        HistoryRow(2, when, "moderator", "hidden", [], "sha256:cd", run),
        HistoryRow(1, None, "import", "imported", [], "sha256:ef", run),
    ]
    for history in (rows, rows[2:], []):
        for caption in ("Revisions of this record, newest first", "this project's <runs>"):
            for total, with_run in ((0, False), (len(history), False), (7, False), (0, True)):
                context = {"history": history, "caption": caption, "total": total, "with_run": with_run}
                expected = Template("{% load kiformat %}" + HISTORY_INCLUDE).render(Context(context))
                written = Template(
                    "{% load runrows %}{% history_table history caption total=total with_run=with_run %}"
                ).render(Context(context))
                assert _squeeze(written) == _squeeze(expected)
    written = Template("{% load runrows %}{% history_table h c %}").render(Context({"h": rows, "c": "x"}))
    assert "api: &lt;b&gt;&quot;Ann&quot;&lt;/b&gt;" in written and "first recorded" in written
