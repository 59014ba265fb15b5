"""Run inside ``manage.py shell`` by tests/project/test_backup.py: fill a site with one of
everything, or print every table's rows as JSON so two databases can be compared."""

from __future__ import annotations

import datetime
import decimal
import json
import sys
import uuid

from django.apps import apps
from django.db import connection


def populate() -> None:
    """Users, a moderator, an API token, an attestation approved, a report resolved, a run
    quarantined (moderation events), a failed and a successful sign-in (axes rows, a session)."""
    from django.contrib.auth.models import Group, User
    from django.test import Client

    from api.services import api_token_issue
    from attestations import moderation, submissions
    from runs.models import Run

    mod = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    mod.groups.add(Group.objects.get(name="moderators"))
    alice = User.objects.create_user("alice", "alice@example.org", "alice-password-1")
    api_token_issue(user=alice, name="alice's CI", issued_by=mod, submitter_name="alice")
    runs = list(Run.objects.order_by("pk")[:3])
    assert len(runs) == 3, "import some runs first"
    attestation = submissions.attestation_create(run=runs[0], kind="note", author=alice, text="Ran it on our B200 too.")
    moderation.attestation_approve(attestation=attestation, actor=mod, reason="checked the log")
    report = submissions.issue_report_create(
        run=runs[1], category="correctness", description="Outputs differ on case 3 when run locally.", reporter=alice
    )
    moderation.report_resolve(report=report, actor=mod, reason="fixed upstream")
    moderation.run_quarantine(run=runs[2], actor=mod, reason="under review")
    client = Client(REMOTE_ADDR="198.51.100.7")
    Client(REMOTE_ADDR="203.0.113.66").post("/accounts/login/", {"username": "mallory", "password": "guess"})
    client.post("/accounts/login/", {"username": "alice", "password": "alice-password-1"})


def _value(value: object) -> object:
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, str) and value[:1] in "{[":
        try:  # JSON columns: text in SQLite, jsonb (keys reordered) in PostgreSQL
            return json.loads(value)
        except ValueError:
            return value
    return value


def tables() -> None:
    """Every table exactly as stored: same-kind backups must restore it row for row."""
    out = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names(cursor)):
            if table.startswith("sqlite_"):
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows = [json.dumps([_value(v) for v in row], sort_keys=True, default=str) for row in cursor.fetchall()]
            out[table] = sorted(rows)
    json.dump(out, sys.stdout, sort_keys=True)


def models() -> None:
    """Every model's rows through the ORM (types alike on every database), content types and
    permissions by natural key (their ids are the target's own after a move), and the applied
    migrations by name."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    content_types = {ct.pk: f"{ct.app_label}.{ct.model}" for ct in ContentType.objects.all()}
    permissions = {p.pk: f"{content_types[p.content_type_id]}.{p.codename}" for p in Permission.objects.all()}
    out = {}
    for model in apps.get_models(include_auto_created=True):
        rows = []
        for row in model._default_manager.values():
            if model is ContentType or model is Permission:
                row.pop("id")
            if "content_type_id" in row:
                row["content_type_id"] = content_types.get(row["content_type_id"])
            if "permission_id" in row:
                row.pop("id", None)
                row["permission_id"] = permissions[row["permission_id"]]
            rows.append(json.dumps({k: _value(v) for k, v in row.items()}, sort_keys=True, default=str))
        out[model._meta.db_table] = sorted(rows)
    with connection.cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations")
        out["django_migrations"] = sorted(f"{app}.{name}" for app, name in cursor.fetchall())
    json.dump(out, sys.stdout, sort_keys=True)
