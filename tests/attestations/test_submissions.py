"""Submitting attestations and reports through the pages: kinds, validation, moderation
visibility, the evidence level, the honeypot, CSRF, emails to moderators."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from attestations import moderation, submissions
from attestations.forms import AttestationForm, IssueReportForm
from attestations.models import Attestation, AttestationState, IssueReport, ModerationEvent
from kernelindex import canonical
from runs.models import Run
from tests.attestations.conftest import note_data, report_data, reproduction_data


def attest_url(run: Run) -> str:
    return reverse("attestations:attest", args=[run.public_id])


def report_url(run: Run) -> str:
    return reverse("attestations:report", args=[run.public_id])


def test_it_shows_the_form_with_the_runs_own_value(anon_client, run, django_assert_num_queries):
    # 1 query: the run (with benchmark and source).
    with django_assert_num_queries(1):
        response = anon_client.get(attest_url(run))
    assert response.status_code == 200
    html = response.content.decode()
    assert "18.6 µs mean" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="website"' in html  # the honeypot is there, hidden
    assert 'type="radio" name="kind" value="reproduction"' in html


def test_it_stores_an_anonymous_reproduction_as_a_verifiable_document(anon_client, run):
    response = anon_client.post(attest_url(run), reproduction_data())
    attestation = Attestation.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("attestations:attest_received", args=[run.public_id, attestation.reference])
    assert attestation.state == AttestationState.PENDING
    assert attestation.author is None and attestation.author_label == "anonymous"
    assert attestation.client_key.startswith("c:")
    doc = json.loads(attestation.document)
    assert doc["apiVersion"] == "kernelindex.dev/v1alpha1" and doc["kind"] == "Attestation"
    assert doc["spec"]["subject"] == [
        {"name": f"run/{run.public_id}", "digest": {"sha256": run.digest.removeprefix("sha256:")}}
    ]
    assert doc["spec"]["predicateType"] == "https://kernelindex.dev/attestation/reproduction/v1"
    predicate = doc["spec"]["predicate"]
    assert predicate["measurement"] == {"value": 19.2, "unit": "µs", "statistic": "mean"}
    assert predicate["cases"] == {"reproduced": 16, "matched": 16}
    assert predicate["environment"] == {"gpu": "NVIDIA B200", "driver": "570.124.06", "cuda": "12.8", "torch": "2.7.0"}
    assert predicate["logs"] == "https://example.org/logs/run-062.txt"
    # Its own digest, by the DESIGN §2 rule, over the stored canonical bytes.
    assert attestation.digest == canonical.digest_of(doc)
    assert attestation.document == canonical.dumps_str(doc)

    confirmation = anon_client.get(response["Location"])
    assert confirmation.status_code == 200
    assert attestation.reference in confirmation.content.decode()


def test_it_stores_an_anonymous_note(anon_client, run):
    response = anon_client.post(attest_url(run), note_data(link="https://example.org/issue/12"))
    assert response.status_code == 302
    note = Attestation.objects.get()
    assert note.kind == "note" and note.measured_value is None and note.gpu_product == ""
    assert note.doc["spec"]["predicateType"] == "https://kernelindex.dev/attestation/note/v1"
    assert note.doc["spec"]["predicate"]["link"] == "https://example.org/issue/12"


@pytest.mark.parametrize("data", [reproduction_data(), note_data()], ids=["reproduction", "note"])
def test_it_credits_signed_in_users(alice_client, alice, run, data):
    response = alice_client.post(attest_url(run), data)
    assert response.status_code == 302
    attestation = Attestation.objects.get()
    assert attestation.author == alice and attestation.author_name == "alice"
    assert attestation.doc["spec"]["predicate"]["author"] == "alice"


def test_it_accepts_us_for_microseconds(anon_client, run):
    anon_client.post(attest_url(run), reproduction_data(measured_unit="us"))
    assert Attestation.objects.get().measured_unit == "µs"


def test_it_reshows_an_invalid_reproduction_with_errors_and_what_was_typed(anon_client, run):
    data = reproduction_data(measured_value="", cases_matched="17", gpu_product="My own H200 box")
    response = anon_client.post(attest_url(run), data)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Required for a reproduction." in html
    assert "Cannot exceed the number of cases reproduced." in html
    assert 'value="My own H200 box"' in html
    assert Attestation.objects.count() == 0


@pytest.mark.parametrize(
    "link",
    ["javascript:alert(1)", "ftp://example.org/logs", "data:text/html,<b>x</b>", "file:///etc/passwd", "not a url"],
)
def test_it_accepts_only_http_links(anon_client, run, link):
    response = anon_client.post(attest_url(run), note_data(link=link))
    assert response.status_code == 400
    assert Attestation.objects.count() == 0


@pytest.mark.parametrize(
    ("field", "length"),
    [("text", 5001), ("command", 2001), ("gpu_product", 201), ("driver_version", 101), ("link", 501)],
)
def test_it_limits_lengths(anon_client, run, field, length):
    value = "https://example.org/" + "a" * (length - 20) if field == "link" else "x" * length
    response = anon_client.post(attest_url(run), reproduction_data(**{field: value}))
    assert response.status_code == 400
    assert Attestation.objects.count() == 0


def test_a_note_needs_text(anon_client, run):
    assert anon_client.post(attest_url(run), note_data(text="")).status_code == 400


def test_pending_is_not_shown_approved_is_shown_rejected_never(anon_client, alice_client, run, mod):
    anon_client.post(attest_url(run), reproduction_data(text="first, from anonymous"))
    alice_client.post(attest_url(run), note_data(text="second, from alice"))
    first = Attestation.objects.get(text="first, from anonymous")
    second = Attestation.objects.get(text="second, from alice")

    page = anon_client.get(run.get_absolute_url()).content.decode()
    assert "first, from anonymous" not in page and "second, from alice" not in page
    assert "No attestations yet." in page

    moderation.attestation_approve(attestation=first, actor=mod)
    moderation.attestation_reject(attestation=second, actor=mod, reason="off topic")
    page = anon_client.get(run.get_absolute_url()).content.decode()
    assert "first, from anonymous" in page
    assert "second, from alice" not in page
    assert "reviewed by moderators" in page
    # The measured value next to the run's own, with the ratio: 19.2 µs / 18.58 µs.
    assert "19.2 µs mean" in page and "18.6 µs mean" in page
    assert "1.03×" in page
    assert "16/16 cases matched" in page
    assert "by anonymous" in page


def test_attestations_never_change_the_evidence_level_or_the_ranking(anon_client, group_runs, mod):
    before = {run.pk: (run.evidence_level, run.rank, run.digest) for run in Run.objects.all()}
    for index, run in enumerate(group_runs * 10):
        anon_client.post(
            attest_url(run),
            reproduction_data(measured_value=str(1 + index), text=f"reproduction {index} says kernelindex_rerun"),
            REMOTE_ADDR=f"198.51.100.{index}",
        )
    assert Attestation.objects.count() == 30
    for attestation in Attestation.objects.all():
        moderation.attestation_approve(attestation=attestation, actor=mod)
    after = {run.pk: (run.evidence_level, run.rank, run.digest) for run in Run.objects.all()}
    assert after == before
    assert {level for level, _, _ in after.values()} == {"source_reported"}


@pytest.mark.parametrize("url_name", ["attestations:attest", "attestations:report"])
def test_a_honeypot_post_looks_fine_and_stores_nothing(anon_client, run, url_name):
    data = (
        reproduction_data(website="http://spam.example")
        if url_name.endswith("attest")
        else report_data(website="cheap pills")
    )
    response = anon_client.post(reverse(url_name, args=[run.public_id]), data)
    assert response.status_code == 302
    assert anon_client.get(response["Location"]).status_code == 200
    assert Attestation.objects.count() == 0
    assert IssueReport.objects.count() == 0
    assert ModerationEvent.objects.count() == 0
    assert mail.outbox == []


@pytest.mark.parametrize("url_name", ["attestations:attest", "attestations:report"])
def test_posts_need_the_csrf_token(run, url_name):
    client = Client(enforce_csrf_checks=True, REMOTE_ADDR="203.0.113.9")
    data = reproduction_data() if url_name.endswith("attest") else report_data()
    response = client.post(reverse(url_name, args=[run.public_id]), data)
    assert response.status_code == 403
    assert Attestation.objects.count() == 0 and IssueReport.objects.count() == 0


def test_tombstones_and_unknown_runs_take_no_submissions(anon_client, run, mod):
    moderation.run_retract(run=run, actor=mod, reason="duplicate of another run")
    assert anon_client.get(attest_url(run)).status_code == 404
    assert anon_client.post(report_url(run), report_data()).status_code == 404
    assert anon_client.get("/runs/ffffffff/attest/").status_code == 404


def test_a_report_is_private_and_emails_the_moderators(anon_client, run, settings, django_capture_on_commit_callbacks):
    settings.MODERATOR_EMAILS = ["mods@example.org", "lead@example.org"]
    # The email leaves once the report is committed.
    with django_capture_on_commit_callbacks(execute=True):
        response = anon_client.post(report_url(run), report_data(contact_email="me@example.org"))
    assert response.status_code == 302
    report = IssueReport.objects.get()
    assert report.state == "open" and report.contact_email == "me@example.org"
    assert report.reference in anon_client.get(response["Location"]).content.decode()
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["mods@example.org", "lead@example.org"]
    assert report.reference in message.subject and run.public_id in message.body
    assert "Outputs differ from the reference" in message.body
    # Private: the run page shows nothing of it.
    assert "Outputs differ from the reference" not in anon_client.get(run.get_absolute_url()).content.decode()


def test_a_report_needs_a_known_category_and_a_description(anon_client, run):
    assert anon_client.post(report_url(run), report_data(category="spam")).status_code == 400
    assert anon_client.post(report_url(run), report_data(description="short")).status_code == 400
    assert anon_client.post(report_url(run), report_data(contact_email="not-an-email")).status_code == 400
    assert IssueReport.objects.count() == 0


def test_a_published_flag_shows_on_the_run_page(anon_client, run, mod):
    anon_client.post(report_url(run), report_data())
    moderation.report_publish_flag(
        report=IssueReport.objects.get(), actor=mod, public_summary="Case 3 output under investigation."
    )
    page = anon_client.get(run.get_absolute_url()).content.decode()
    assert "Case 3 output under investigation." in page
    assert "Outputs differ from the reference" not in page


def test_two_different_reporters_propose_a_quarantine_once(run):
    def report(address: str, category: str = "correctness") -> None:
        Client(REMOTE_ADDR=address).post(report_url(run), report_data(category=category))

    report("192.0.2.1")
    report("192.0.2.1", "exploit")  # the same reporter again: still one
    report("192.0.2.2", "incorrect_data")  # another reporter, but not about correctness
    assert not ModerationEvent.objects.filter(action="quarantine_proposed").exists()
    report("192.0.2.2", "exploit")
    proposal = ModerationEvent.objects.get(action="quarantine_proposed")
    assert proposal.run == run and proposal.actor is None and proposal.actor_label == "system"
    report("192.0.2.3")  # a third reporter: the open proposal stands, no second one
    assert ModerationEvent.objects.filter(action="quarantine_proposed").count() == 1
    assert moderation.quarantine_proposal_open(run)
    run.refresh_from_db()
    assert run.quarantined is False  # proposed, not decided


def test_signed_in_reporters_are_told_apart_by_account(run, alice, mod):
    submissions.issue_report_create(run=run, category="exploit", description="x" * 20, reporter=alice, client_key="c:1")
    submissions.issue_report_create(run=run, category="exploit", description="y" * 20, reporter=alice, client_key="c:2")
    assert not moderation.quarantine_proposal_open(run)
    submissions.issue_report_create(
        run=run, category="correctness", description="z" * 20, reporter=mod, client_key="c:1"
    )
    assert moderation.quarantine_proposal_open(run)


def test_the_forms_take_json_data(run):
    form = AttestationForm(
        {
            "kind": "reproduction",
            "measured_value": 19.2,
            "measured_unit": "ms",
            "measured_statistic": "median",
            "cases_reproduced": 16,
            "cases_matched": 15,
            "gpu_product": "NVIDIA H200",
            "command": "make bench",
        },
        run=run,
    )
    assert form.is_valid(), form.errors
    assert form.service_kwargs()["measured_value"] == 19.2
    assert form.service_kwargs()["driver_version"] == ""
    bad = AttestationForm({"kind": "note", "text": ["a", "list"]}, run=run)
    assert not bad.is_valid() and "text" in bad.errors
    report = IssueReportForm({"category": "duplicate", "description": {"not": "text"}}, run=run)
    assert not report.is_valid() and "description" in report.errors


def test_published_attestations_cost_the_run_page_no_extra_queries(client, run, mod):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def publish(n: int) -> None:
        for index in range(n):
            attestation = submissions.attestation_create(
                run=run, kind="reproduction", measured_value=19.0 + index, measured_unit="µs",
                measured_statistic="mean", cases_reproduced=16, cases_matched=16, gpu_product="NVIDIA B200",
                command="make bench", client_key=f"c:{index}",
            )  # fmt: skip
            moderation.attestation_approve(attestation=attestation, actor=mod)
        report = submissions.issue_report_create(run=run, category="other", description="A note for moderators.")
        moderation.report_publish_flag(report=report, actor=mod, public_summary=f"flag {n}")

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(run.get_absolute_url()).status_code == 200
        return len(captured)

    publish(2)
    few = count()
    publish(20)
    assert count() == few
    assert client.get(run.get_absolute_url()).content.decode().count("reviewed by moderators") == 22
