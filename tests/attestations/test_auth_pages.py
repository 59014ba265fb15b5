"""Django's own sign-in pages, in the site's layout: login, logout, password reset by email."""

from __future__ import annotations

import re

from django.core import mail


def test_it_signs_in_and_out(client, alice):
    page = client.get("/accounts/login/?next=/")
    assert page.status_code == 200 and 'name="username"' in page.content.decode()
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-password-1", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert "_auth_user_id" in client.session
    out = client.post("/accounts/logout/")
    assert out.status_code == 302  # LOGOUT_REDIRECT_URL
    assert "_auth_user_id" not in client.session


def test_a_wrong_password_reshows_the_form(client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_it_resets_a_password_by_email(client, alice):
    response = client.post("/accounts/password_reset/", {"email": "alice@example.org"})
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.subject == "KernelIndex password reset"
    link = re.search(r"https?://[^/]+(/accounts/reset/\S+)", message.body).group(1)
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": "a-new-long-password-7", "new_password2": "a-new-long-password-7"}
    )
    assert done.status_code == 302
    assert client.login(username="alice", password="a-new-long-password-7")


def test_an_unknown_email_gets_the_same_answer_and_no_mail(client, db):
    response = client.post("/accounts/password_reset/", {"email": "nobody@example.org"}, follow=True)
    assert "Check your email" in response.content.decode()
    assert mail.outbox == []
