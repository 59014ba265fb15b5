"""Sign-in is throttled (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords from one client
or for one username, even the right password is refused with a page that says why, on both
sign-in pages; moderators see the failures in the admin. Other users and addresses sign in."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.contrib.auth.models import Group, User
from django.test import Client

LOGIN_PAGES = ["/accounts/login/", "/admin/login/"]


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.org", "alice-password-1", is_staff=True)


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user("bob", "bob@example.org", "bob-password-1", is_staff=True)


def sign_in(client: Client, page: str, username: str, password: str):
    return client.post(page, {"username": username, "password": password, "next": "/"})


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("page", LOGIN_PAGES)
def test_it_refuses_the_right_password_after_60_wrong_ones(page: str, alice: User) -> None:
    attacker = Client(REMOTE_ADDR="198.51.100.10")
    for _ in range(60):
        response = sign_in(attacker, page, "alice", "wrong-password")
        assert not signed_in(attacker)
    response = sign_in(attacker, page, "alice", "alice-password-1")
    assert response.status_code == 429
    assert not signed_in(attacker)
    assert "Too many sign-in attempts" in response.content.decode()
    assert "after 5 failed attempts" in response.content.decode()


@pytest.mark.parametrize("page", LOGIN_PAGES)
def test_the_lockout_follows_the_username_to_another_address(page: str, alice: User) -> None:
    for number in range(5):
        sign_in(Client(REMOTE_ADDR=f"198.51.100.{20 + number}"), page, "alice", "wrong-password")
    elsewhere = Client(REMOTE_ADDR="192.0.2.99")
    response = sign_in(elsewhere, page, "alice", "alice-password-1")
    assert response.status_code == 429 and not signed_in(elsewhere)


@pytest.mark.parametrize("page", LOGIN_PAGES)
def test_the_lockout_follows_the_address_to_another_username(page: str, alice: User, bob: User) -> None:
    attacker = Client(REMOTE_ADDR="198.51.100.10")
    for _ in range(5):
        sign_in(attacker, page, "alice", "wrong-password")
    response = sign_in(attacker, page, "bob", "bob-password-1")
    assert response.status_code == 429 and not signed_in(attacker)


@pytest.mark.parametrize("page", LOGIN_PAGES)
def test_another_user_at_another_address_is_unaffected(page: str, alice: User, bob: User) -> None:
    attacker = Client(REMOTE_ADDR="198.51.100.10")
    for _ in range(60):
        sign_in(attacker, page, "alice", "wrong-password")
    colleague = Client(REMOTE_ADDR="192.0.2.50")
    response = sign_in(colleague, page, "bob", "bob-password-1")
    assert response.status_code == 302 and signed_in(colleague)


def test_four_failures_then_the_right_password_signs_in(alice: User) -> None:
    client = Client(REMOTE_ADDR="198.51.100.10")
    for _ in range(4):
        sign_in(client, "/accounts/login/", "alice", "wrong-password")
    assert sign_in(client, "/accounts/login/", "alice", "alice-password-1").status_code == 302
    assert signed_in(client)


def test_behind_a_proxy_the_client_address_comes_from_the_trusted_hop(settings, alice: User, bob: User) -> None:
    """With one trusted proxy, the lockout is for the address the proxy saw (kernelindex.clients),
    not for the proxy itself and not for what the client wrote into X-Forwarded-For."""
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.1"
    for number in range(5):
        # A forged left-hand entry changes nothing: the proxy appended the real address.
        forged = f"203.0.113.{number}, 198.51.100.10"
        sign_in(Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=forged), "/accounts/login/", "alice", "wrong")
    attempt = AccessAttempt.objects.get(username="alice")
    assert attempt.ip_address == "198.51.100.10"
    same_client = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.10")
    assert sign_in(same_client, "/accounts/login/", "bob", "bob-password-1").status_code == 429
    other_client = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR="192.0.2.50")
    assert sign_in(other_client, "/accounts/login/", "bob", "bob-password-1").status_code == 302


def test_moderators_see_the_failures_in_the_admin(alice: User) -> None:
    for _ in range(6):
        sign_in(Client(REMOTE_ADDR="198.51.100.10"), "/admin/login/", "alice", "wrong-password")
    assert AccessFailureLog.objects.filter(username="alice").count() == 6
    moderator = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    moderator.groups.add(Group.objects.get(name="moderators"))
    client = Client()
    client.force_login(moderator)
    attempts = client.get("/admin/axes/accessattempt/")
    assert attempts.status_code == 200
    assert "198.51.100.10" in attempts.content.decode()
    failures = client.get("/admin/axes/accessfailurelog/")
    assert failures.status_code == 200
    assert "alice" in failures.content.decode()


def test_moderators_only_read_the_sign_in_records(alice: User) -> None:
    sign_in(Client(REMOTE_ADDR="198.51.100.10"), "/admin/login/", "alice", "wrong-password")
    attempt = AccessAttempt.objects.get(username="alice")
    moderator = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    moderator.groups.add(Group.objects.get(name="moderators"))
    client = Client()
    client.force_login(moderator)
    client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()
    assert client.get("/admin/axes/accessattempt/add/").status_code == 403


def test_staff_without_the_moderation_log_do_not_see_them(alice: User) -> None:
    client = Client()
    client.force_login(alice)  # staff, no permissions
    assert client.get("/admin/axes/accessattempt/").status_code == 403
