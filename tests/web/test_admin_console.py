"""The moderation console as issue 12 asks: it is named KernelIndex moderation, each report,
attestation and run change page has its actions as buttons that lead to the same reason step as
the bulk actions, and nothing users submitted can be deleted in bulk."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from attestations.models import Attestation, AttestationKind, IssueReport
from runs.models import Run
from tests.factories import import_bundles, reference_bundle


@pytest.fixture
def run(db) -> Run:
    return Run.objects.get(public_id=import_bundles([reference_bundle()]).run_ids[0])


@pytest.fixture
def mod_client(db) -> Client:
    user = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    user.groups.add(Group.objects.get(name="moderators"))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root_client(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.org", "root-password-1"))
    return client


def submissions(run: Run) -> tuple[Attestation, IssueReport]:
    attestation = Attestation.objects.create(
        run=run, kind=AttestationKind.NOTE, digest="sha256:" + "1" * 64, reference="A-ADMIN-1", document="{}",
        text="The kernel assumes a contiguous KV cache.",
    )  # fmt: skip
    report = IssueReport.objects.create(
        run=run, reference="R-ADMIN-1", category="correctness", description="Outputs differ on case 3."
    )
    return attestation, report


def buttons(body: str) -> dict[str, str]:
    """action name → button text of the change page's action buttons."""
    forms = re.findall(r'<form method="post" action="([^"]*)" class="object-action">(.*?)</form>', body, re.S)
    found = {}
    for _action, form in forms:
        name = re.search(r'name="action" value="([^"]+)"', form).group(1)
        found[name] = re.search(r"<button[^>]*>(.*?)</button>", form, re.S).group(1)
    return found


def test_it_is_named_kernelindex_moderation(mod_client):
    body = mod_client.get("/admin/").content.decode()
    assert "KernelIndex moderation" in body and "Django administration" not in body
    assert "<title>Moderation console | KernelIndex moderation</title>" in body


def test_change_pages_have_their_actions_as_buttons(mod_client, run):
    attestation, report = submissions(run)
    pages = {
        f"/admin/runs/run/{run.pk}/change/": {"quarantine_runs", "hide_runs", "retract_runs", "restore_runs"},
        f"/admin/attestations/attestation/{attestation.pk}/change/": {"approve", "reject"},
        f"/admin/attestations/issuereport/{report.pk}/change/": {
            "publish_flag",
            "resolve",
            "dismiss",
            "quarantine_runs",
        },
    }
    for url, expected in pages.items():
        body = mod_client.get(url).content.decode()
        assert expected <= set(buttons(body)), url
        assert "delete_selected" not in buttons(body)


@pytest.mark.parametrize("kind", ["run", "attestation", "report"])
def test_a_button_leads_to_the_same_reason_step_as_the_bulk_action(mod_client, run, kind):
    attestation, report = submissions(run)
    target, changelist, action, label = {
        "run": (run, "/admin/runs/run/", "quarantine_runs", "Public reason for the quarantine"),
        "attestation": (attestation, "/admin/attestations/attestation/?state=all", "reject", "reason"),
        "report": (report, "/admin/attestations/issuereport/?state=all", "resolve", "reason"),
    }[kind]
    page = mod_client.get(f"{changelist.split('?')[0]}{target.pk}/change/").content.decode()
    assert f'action="{changelist}"' in page
    step = mod_client.post(changelist, {"action": action, "_selected_action": [target.pk], "index": "0"})
    assert step.status_code == 200
    body = step.content.decode()
    assert 'name="reason"' in body and label.lower() in body.lower()
    assert f'name="_selected_action" value="{target.pk}"' in body


def test_a_handled_report_can_still_be_acted_on_from_its_page(mod_client, run):
    _, report = submissions(run)
    IssueReport.objects.filter(pk=report.pk).update(state="dismissed")
    step = mod_client.post(
        "/admin/attestations/issuereport/?state=all",
        {"action": "quarantine_runs", "_selected_action": [report.pk], "index": "0"},
    )
    assert step.status_code == 200 and str(run) in step.content.decode()


def test_nothing_users_submitted_can_be_deleted_in_bulk(mod_client, root_client, run):
    attestation, report = submissions(run)
    for client in (mod_client, root_client):
        for changelist in ("/admin/attestations/attestation/?state=all", "/admin/attestations/issuereport/?state=all"):
            body = client.get(changelist).content.decode()
            assert 'value="delete_selected"' not in body, changelist
            assert client.post(
                changelist, {"action": "delete_selected", "_selected_action": [attestation.pk, report.pk], "index": "0"}
            ).status_code in (200, 302)
    assert Attestation.objects.filter(pk=attestation.pk).exists() and IssueReport.objects.filter(pk=report.pk).exists()
    # A superuser keeps the one-object delete page, which shows what goes and asks to confirm.
    assert root_client.get(f"/admin/attestations/attestation/{attestation.pk}/delete/").status_code == 200
    assert mod_client.get(f"/admin/attestations/attestation/{attestation.pk}/delete/").status_code == 403
