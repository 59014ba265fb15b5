"""In Debian's chromium against gunicorn: a visitor adds a reproduction, a moderator approves
it in the admin, the visitor sees it on the run page."""

from __future__ import annotations

import re

import pytest

from tests.attestations.conftest import LiveSite
from tests.conftest import CHROMIUM

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def moderator(fresh_site: LiveSite) -> tuple[str, str]:
    fresh_site.shell(
        "from django.contrib.auth.models import Group, User; "
        "User.objects.filter(username='maria').delete(); "
        "u = User.objects.create_user('maria', 'maria@example.org', 'moderate-carefully-42', is_staff=True); "
        "u.groups.add(Group.objects.get(name='moderators')); print('ok')"
    )
    return "maria", "moderate-carefully-42"


def test_a_reproduction_goes_from_visitor_to_moderator_to_run_page(fresh_site, moderator):
    from playwright.sync_api import expect, sync_playwright

    site = fresh_site
    run_url = f"{site.url}/runs/{site.run_id}/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            visitor = browser.new_context().new_page()
            visitor.goto(run_url)
            visitor.get_by_role("link", name="Add a reproduction or note").click()
            expect(visitor.get_by_role("heading", level=1)).to_have_text("Add a reproduction or note")
            visitor.get_by_label("reproduction").check()
            visitor.get_by_label("Measured value").fill("19.4")
            visitor.get_by_label("Unit").select_option("µs")
            visitor.get_by_label("Statistic").select_option("mean")
            visitor.get_by_label("Cases reproduced").fill("16")
            visitor.get_by_label("Cases matched").fill("16")
            visitor.get_by_label("GPU product").fill("NVIDIA B200")
            visitor.get_by_label("CUDA version").fill("12.8")
            visitor.get_by_label("Command or harness").fill("python -m sol_execbench.eval --kernel 062")
            visitor.get_by_label("Text").fill("Reproduced on a rented B200, 100 repetitions.")
            visitor.get_by_role("button", name="Submit for review").click()
            expect(visitor.get_by_role("heading", level=1)).to_contain_text("your attestation was received")
            reference = visitor.locator(".reference").inner_text()
            assert re.fullmatch(r"A-[0-9a-f]{10}", reference)
            visitor.goto(run_url)
            expect(visitor.locator("#replications")).to_contain_text("No attestations yet.")

            username, password = moderator
            admin = browser.new_context().new_page()
            admin.goto(f"{site.url}/admin/")
            admin.get_by_label("Username").fill(username)
            admin.get_by_label("Password").fill(password)
            admin.get_by_role("button", name="Log in").click()
            expect(admin.locator("#moderation-queues")).to_contain_text("Pending attestations")
            admin.get_by_role("link", name="Pending attestations").click()
            row = admin.locator("#result_list tbody tr", has_text=reference)
            expect(row).to_have_count(1)
            row.locator("input.action-select").check()
            admin.locator("select[name=action]").select_option("approve")
            admin.get_by_role("button", name="Go").first.click()
            expect(admin.get_by_role("heading", level=1)).to_contain_text("Approve")
            admin.get_by_label("Note (optional, kept on record)").fill("Logs look consistent.")
            admin.locator("input[type=submit][value=Approve]").click()
            expect(admin.locator(".messagelist")).to_contain_text("Approve: 1 done")
            expect(admin.locator("#result_list tbody tr", has_text=reference)).to_have_count(0)

            visitor.reload()
            replications = visitor.locator("#replications")
            expect(replications).to_contain_text("Reproduced on a rented B200, 100 repetitions.")
            expect(replications).to_contain_text("reviewed by moderators")
            expect(replications).to_contain_text("19.4 µs mean")
            expect(replications).to_contain_text("by anonymous")
            # The run's evidence level is what the source gave it.
            expect(visitor.locator(".evidence")).to_contain_text("source reported")
        finally:
            browser.close()

    events = site.shell(
        "from attestations.models import ModerationEvent; "
        "print(list(ModerationEvent.objects.values_list('action', 'actor__username', 'reason')))"
    )
    assert events == "[('attestation_approve', 'maria', 'Logs look consistent.')]"
