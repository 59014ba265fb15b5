"""Issue 10: every admin action declares the permission it needs, and the token revoke action
does not run for a staff user who may only view tokens."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import Client

from api.models import ApiToken
from api.services import api_token_issue

pytestmark = pytest.mark.django_db


def test_every_admin_action_declares_its_permission() -> None:
    missing = []
    for model, model_admin in admin.site._registry.items():
        for name in model_admin.actions or []:
            func = name if callable(name) else getattr(model_admin, name, None) or admin.site.get_action(name)
            if not getattr(func, "allowed_permissions", None):
                missing.append(f"{model.__name__}.{getattr(func, '__name__', name)}")
    assert not missing, missing


def test_a_viewer_of_tokens_cannot_revoke_them(django_user_model: Any, alice: Any, staff: Any) -> None:
    token, _ = api_token_issue(user=alice, name="alice CI", issued_by=staff)
    viewer = django_user_model.objects.create_user("viewer", password="viewer-password-1", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_apitoken"))
    client = Client()
    client.force_login(viewer)
    changelist = client.get("/admin/api/apitoken/")
    assert changelist.status_code == 200
    assert 'value="revoke"' not in changelist.content.decode()
    response = client.post(
        "/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk], "index": 0}, follow=True
    )
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.revoked_at is None


def test_a_token_editor_can_revoke(django_user_model: Any, alice: Any, staff: Any) -> None:
    token, _ = api_token_issue(user=alice, name="alice CI", issued_by=staff)
    editor = django_user_model.objects.create_user("editor", password="editor-password-1", is_staff=True)
    editor.user_permissions.add(*Permission.objects.filter(codename__in=["view_apitoken", "change_apitoken"]))
    client = Client()
    client.force_login(editor)
    assert 'value="revoke"' in client.get("/admin/api/apitoken/").content.decode()
    client.post("/admin/api/apitoken/", {"action": "revoke", "_selected_action": [token.pk], "index": 0})
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert ApiToken.objects.filter(revoked_at__isnull=False).count() == 1
