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
