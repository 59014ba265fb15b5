"""Moderation: every action writes exactly one ModerationEvent, eligibility changes re-rank,
the admin console's queues, reason step, read-only log, no delete, fixed query counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError

from attestations import moderation, submissions
from attestations.models import Attestation, IssueReport, ModerationEvent
from runs.models import Run
from tests.factories import sol_group


def make_attestation(run: Run, **kwargs: Any) -> Attestation:
    return submissions.attestation_create(run=run, kind="note", text=kwargs.pop("text", "a note"), **kwargs)


def make_report(run: Run, *, client_key: str = "c:a", category: str = "correctness") -> IssueReport:
    return submissions.issue_report_create(
        run=run, category=category, description="The outputs look wrong on case 3.", client_key=client_key
    )


# -- services -----------------------------------------------------------------------------------

ACTIONS: dict[str, Callable[[Run, Any], Any]] = {
    "attestation_approve": lambda run, mod: moderation.attestation_approve(
        attestation=make_attestation(run), actor=mod, reason="fine"
    ),
    "attestation_reject": lambda run, mod: moderation.attestation_reject(
        attestation=make_attestation(run), actor=mod, reason="spam"
    ),
    "report_publish_flag": lambda run, mod: moderation.report_publish_flag(
        report=make_report(run), actor=mod, public_summary="Under review."
    ),
    "report_resolve": lambda run, mod: moderation.report_resolve(report=make_report(run), actor=mod, reason="fixed"),
    "report_dismiss": lambda run, mod: moderation.report_dismiss(report=make_report(run), actor=mod, reason="no issue"),
    "run_quarantine": lambda run, mod: moderation.run_quarantine(run=run, actor=mod, reason="checking case 3"),
    "run_hide": lambda run, mod: moderation.run_hide(run=run, actor=mod, reason="imported by mistake"),
    "run_retract": lambda run, mod: moderation.run_retract(run=run, actor=mod, reason="invalid result"),
    "run_restore": lambda run, mod: moderation.run_restore(
        run=moderation.run_hide(run=run, actor=mod, reason="x"), actor=mod, reason="false alarm"
    ),
}


@pytest.mark.parametrize("action", ACTIONS)
def test_every_action_writes_exactly_one_event(group_runs, mod, action):
    run = group_runs[0]
    if action == "run_restore":
        moderation.run_hide(run=run, actor=mod, reason="x")
        before = ModerationEvent.objects.count()
        moderation.run_restore(run=run, actor=mod, reason="false alarm")
    else:
        before = ModerationEvent.objects.count()
        ACTIONS[action](run, mod)
    assert ModerationEvent.objects.count() == before + 1
    event = ModerationEvent.objects.order_by("-pk").first()
    assert event.action == action
    assert event.actor == mod and event.actor_label == "mod"
    assert event.run == run
    assert event.reason


def test_dismissing_a_quarantine_proposal_writes_one_event(run, mod):
    make_report(run, client_key="c:a")
    make_report(run, client_key="c:b")
    before = ModerationEvent.objects.count()
    moderation.quarantine_proposal_dismiss(run=run, actor=mod, reason="both reports are about another run")
    assert ModerationEvent.objects.count() == before + 1
    assert not moderation.quarantine_proposal_open(run)
    with pytest.raises(moderation.ModerationError):
        moderation.quarantine_proposal_dismiss(run=run, actor=mod, reason="again")


def test_actions_that_do_not_apply_write_nothing(run, mod):
    attestation = make_attestation(run)
    moderation.attestation_approve(attestation=attestation, actor=mod)
    count = ModerationEvent.objects.count()
    with pytest.raises(moderation.ModerationError):
        moderation.attestation_approve(attestation=attestation, actor=mod)
    with pytest.raises(moderation.ModerationError):
        moderation.run_restore(run=run, actor=mod, reason="it is not hidden")
    with pytest.raises(ValidationError):
        moderation.run_quarantine(run=run, actor=mod, reason="   ")
    with pytest.raises(ValidationError):
        moderation.attestation_reject(attestation=attestation, actor=mod, reason="")
    assert ModerationEvent.objects.count() == count


@pytest.mark.parametrize("service", [moderation.run_quarantine, moderation.run_hide, moderation.run_retract])
def test_leaving_the_ranking_and_coming_back(group_runs, mod, service):
    first, second, third = group_runs
    assert [run.rank for run in group_runs] == [1, 2, 3]
    service(run=first, actor=mod, reason="under review")
    ranks = dict(Run.objects.values_list("pk", "rank"))
    assert ranks == {first.pk: None, second.pk: 1, third.pk: 2}
    first.refresh_from_db()
    assert first.public_reason == "under review"
    moderation.run_restore(run=first, actor=mod, reason="cleared")
    ranks = dict(Run.objects.values_list("pk", "rank"))
    assert ranks == {first.pk: 1, second.pk: 2, third.pk: 3}
    first.refresh_from_db()
    assert first.public_reason == "" and not first.quarantined and first.visibility == "published"


# -- the admin console ----------------------------------------------------------------------------


def post_action(client: Any, changelist: str, action: str, pks: list[int], reason: str | None) -> Any:
    data: dict[str, Any] = {"action": action, ACTION_CHECKBOX_NAME: [str(pk) for pk in pks]}
    if reason is not None:
        data.update({"apply": "1", "reason": reason})
    return client.post(changelist, data)


ATTESTATIONS = "/admin/attestations/attestation/"
REPORTS = "/admin/attestations/issuereport/"
RUNS = "/admin/runs/run/"


def test_a_bulk_action_asks_for_the_reason_then_writes_one_event_per_item(mod_client, group_runs):
    attestations = [make_attestation(run) for run in group_runs]
    pks = [a.pk for a in attestations]
    step = post_action(mod_client, ATTESTATIONS, "reject", pks, None)
    assert step.status_code == 200
    assert 'name="reason"' in step.content.decode() and "Reason for rejecting" in step.content.decode()
    # An empty reason re-asks and changes nothing.
    again = post_action(mod_client, ATTESTATIONS, "reject", pks, "")
    assert again.status_code == 200 and ModerationEvent.objects.count() == 0
    done = post_action(mod_client, ATTESTATIONS, "reject", pks, "duplicates")
    assert done.status_code == 302
    assert set(Attestation.objects.values_list("state", flat=True)) == {"rejected"}
    assert ModerationEvent.objects.filter(action="attestation_reject").count() == 3


@pytest.mark.parametrize(
    ("changelist", "action", "event", "needs_reason"),
    [
        (ATTESTATIONS, "approve", "attestation_approve", False),
        (ATTESTATIONS, "reject", "attestation_reject", True),
        (REPORTS, "publish_flag", "report_publish_flag", True),
        (REPORTS, "resolve", "report_resolve", True),
        (REPORTS, "dismiss", "report_dismiss", True),
        (REPORTS, "quarantine_runs", "run_quarantine", True),
        (REPORTS, "hide_runs", "run_hide", True),
        (REPORTS, "retract_runs", "run_retract", True),
        (RUNS, "quarantine_runs", "run_quarantine", True),
        (RUNS, "hide_runs", "run_hide", True),
        (RUNS, "retract_runs", "run_retract", True),
    ],
)
def test_each_admin_action_writes_exactly_one_event(mod_client, run, changelist, action, event, needs_reason):
    target = {ATTESTATIONS: make_attestation(run), REPORTS: make_report(run), RUNS: run}[changelist]
    if needs_reason:
        post_action(mod_client, changelist, action, [target.pk], "")
        assert ModerationEvent.objects.count() == 0
    response = post_action(mod_client, changelist, action, [target.pk], "A reason <b>the public may see</b>")
    assert response.status_code == 302
    assert ModerationEvent.objects.count() == 1
    assert ModerationEvent.objects.get().action == event


def test_restore_and_dismiss_proposal_from_the_run_admin(mod_client, run, mod):
    moderation.run_quarantine(run=run, actor=mod, reason="checking")
    post_action(mod_client, RUNS, "restore_runs", [run.pk], "cleared")
    assert ModerationEvent.objects.filter(action="run_restore").count() == 1
    make_report(run, client_key="c:1")
    make_report(run, client_key="c:2")
    assert mod_client.get(RUNS + "?proposed=yes").context["cl"].result_count == 1
    post_action(mod_client, RUNS, "dismiss_quarantine_proposal", [run.pk], "not convincing")
    assert ModerationEvent.objects.filter(action="quarantine_proposal_dismiss").count() == 1
    assert mod_client.get(RUNS + "?proposed=yes").context["cl"].result_count == 0


def test_the_admin_index_shows_the_queues(mod_client, run):
    make_attestation(run)
    make_attestation(run)
    make_report(run, client_key="c:1")
    make_report(run, client_key="c:2")
    response = mod_client.get("/admin/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Moderation queues" in html
    assert '?state=pending">Pending attestations</a></th><td class="count">2<' in html
    assert '?state=open">Open reports</a></th><td class="count">2<' in html
    assert '?proposed=yes">Quarantine proposals</a></th><td class="count">1<' in html


def test_the_queues_default_to_pending_and_open(mod_client, run, mod):
    pending = make_attestation(run, text="pending one")
    moderation.attestation_approve(attestation=make_attestation(run, text="approved one"), actor=mod)
    cl = mod_client.get(ATTESTATIONS).context["cl"]
    assert [obj.pk for obj in cl.result_list] == [pending.pk]
    assert mod_client.get(ATTESTATIONS + "?state=all").context["cl"].result_count == 2
    report = make_report(run)
    moderation.report_dismiss(report=make_report(run, client_key="c:z"), actor=mod, reason="no")
    assert [obj.pk for obj in mod_client.get(REPORTS).context["cl"].result_list] == [report.pk]
    assert mod_client.get(REPORTS + "?q=case+3&state=all").context["cl"].result_count == 2


def test_events_are_read_only_and_shown_on_the_targets_page(mod_client, run, mod):
    attestation = make_attestation(run)
    moderation.attestation_reject(attestation=attestation, actor=mod, reason="spam, reason on record")
    event = ModerationEvent.objects.get()
    for url in (f"/admin/attestations/attestation/{attestation.pk}/change/", f"/admin/runs/run/{run.pk}/change/"):
        html = mod_client.get(url).content.decode()
        assert "spam, reason on record" in html and "attestation_reject" in html
    change = mod_client.get(f"/admin/attestations/moderationevent/{event.pk}/change/")
    assert change.status_code == 200
    assert 'name="reason"' not in change.content.decode()  # shown, not editable
    mod_client.post(f"/admin/attestations/moderationevent/{event.pk}/change/", {"reason": "rewritten"})
    event.refresh_from_db()
    assert event.reason == "spam, reason on record"
    assert mod_client.get("/admin/attestations/moderationevent/add/").status_code == 403


def test_submitted_content_is_read_only_in_the_admin(mod_client, run):
    attestation = make_attestation(run, text="as submitted")
    url = f"/admin/attestations/attestation/{attestation.pk}/change/"
    assert mod_client.get(url).status_code == 200
    mod_client.post(url, {"text": "edited", "state": "published"})
    attestation.refresh_from_db()
    assert attestation.text == "as submitted" and attestation.state == "pending"


# -- nobody deletes -------------------------------------------------------------------------------


def test_the_moderators_group_has_only_what_moderation_needs(db):
    codenames = set(Group.objects.get(name="moderators").permissions.values_list("codename", flat=True))
    assert codenames == {
        "view_run",
        "change_run",
        "view_attestation",
        "change_attestation",
        "view_issuereport",
        "change_issuereport",
        "view_moderationevent",
        # Moderators request reruns (issue 14): the one thing they add, and they see the queue.
        "add_rerunrequest",
        "view_rerunrequest",
    }
    assert not any(code.startswith("delete_") for code in codenames)
    assert [code for code in codenames if code.startswith("add_")] == ["add_rerunrequest"]


def test_a_moderator_cannot_delete(mod_client, run, mod):
    attestation = make_attestation(run)
    report = make_report(run)
    moderation.attestation_reject(attestation=attestation, actor=mod, reason="spam")
    event = ModerationEvent.objects.get()
    for url in (
        f"/admin/runs/run/{run.pk}/delete/",
        f"/admin/attestations/attestation/{attestation.pk}/delete/",
        f"/admin/attestations/issuereport/{report.pk}/delete/",
        f"/admin/attestations/moderationevent/{event.pk}/delete/",
    ):
        assert mod_client.get(url).status_code == 403
        assert mod_client.post(url, {"post": "yes"}).status_code == 403
    for changelist, pk in ((RUNS, run.pk), (ATTESTATIONS, attestation.pk), (REPORTS, report.pk)):
        page = mod_client.get(changelist + "?state=all")
        assert "delete_selected" not in page.content.decode()
        mod_client.post(changelist, {"action": "delete_selected", ACTION_CHECKBOX_NAME: [pk], "post": "yes"})
    assert Run.objects.filter(pk=run.pk).exists()
    assert Attestation.objects.filter(pk=attestation.pk).exists()
    assert IssueReport.objects.filter(pk=report.pk).exists()
    assert ModerationEvent.objects.filter(pk=event.pk).exists()


def test_not_even_a_superuser_deletes_runs_or_the_log(root_client, run, root):
    moderation.run_quarantine(run=run, actor=root, reason="checking")
    event = ModerationEvent.objects.get()
    assert root_client.post(f"/admin/runs/run/{run.pk}/delete/", {"post": "yes"}).status_code == 403
    event_delete = f"/admin/attestations/moderationevent/{event.pk}/delete/"
    assert root_client.post(event_delete, {"post": "yes"}).status_code == 403
    root_client.post(RUNS, {"action": "delete_selected", ACTION_CHECKBOX_NAME: [run.pk], "post": "yes"})
    assert Run.objects.filter(pk=run.pk).exists() and ModerationEvent.objects.filter(pk=event.pk).exists()


def test_anonymous_and_plain_users_stay_out_of_the_admin(client, alice_client, run):
    assert client.get(ATTESTATIONS).status_code == 302
    assert alice_client.get(ATTESTATIONS).status_code == 302


# -- fixed query counts ------------------------------------------------------------------------------


def _fill(n: int, mod: Any) -> None:
    result = sol_group(n)
    runs = list(Run.objects.filter(public_id__in=result.run_ids))
    for index, run in enumerate(runs):
        attestation = make_attestation(run, text=f"note {index}")
        moderation.attestation_approve(attestation=attestation, actor=mod)
        make_attestation(run, text=f"pending {index}")
        report = make_report(run, client_key=f"c:{index}")
        if index % 2:
            moderation.report_publish_flag(report=report, actor=mod, public_summary="flagged")


def _queries(client: Any, url: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


@pytest.mark.parametrize(
    "url",
    [
        ATTESTATIONS,
        ATTESTATIONS + "?state=all",
        REPORTS + "?state=all",
        RUNS,
        RUNS + "?proposed=yes",
        "/admin/attestations/moderationevent/",
        "/admin/",
    ],
)
def test_admin_lists_cost_the_same_queries_for_10_and_40_rows(mod_client, mod, url, django_assert_num_queries):
    _fill(10, mod)
    small = _queries(mod_client, url)
    _fill(30, mod)  # another group: 40 runs, 80 attestations, 40 reports in all
    large = _queries(mod_client, url)
    assert small == large
    # Pinned. Every admin page: session, user, the user's and the group's permissions (4).
    # A changelist then adds: the filtered count, the total count, one page of rows with their
    # related rows joined (list_select_related) and counts as subqueries, the date hierarchy's
    # min/max and its days (5); the runs list its source filter's choices (+1), the log its
    # action and target-type filter choices (+2). The index: the three queue counts and the
    # recent-actions box (4).
    expected = {
        ATTESTATIONS: 9,
        ATTESTATIONS + "?state=all": 9,
        REPORTS + "?state=all": 9,
        RUNS: 10,
        RUNS + "?proposed=yes": 10,
        "/admin/attestations/moderationevent/": 11,
        "/admin/": 8,
    }[url]
    with django_assert_num_queries(expected):
        mod_client.get(url)
