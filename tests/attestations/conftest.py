"""Fixtures for the attestation, report and moderation tests.

Personas: ``alice`` is a signed-in user without staff rights, ``mod`` a staff member of the
``moderators`` group (created by the data migration), ``root`` a superuser. ``run`` is the
reference run imported from its shipped bundle; ``group_runs`` is one comparison group of
three runs (synthetic numbers from tests.factories, for ranking effects).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from runs.models import Run
from tests.factories import import_bundles, reference_bundle, sol_group


@pytest.fixture
def run(db) -> Run:
    result = import_bundles([reference_bundle()])
    return Run.objects.get(public_id=result.run_ids[0])


@pytest.fixture
def group_runs(db) -> list[Run]:
    result = sol_group(3)
    return list(Run.objects.filter(public_id__in=result.run_ids).order_by("rank"))


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.org", "alice-password-1")


@pytest.fixture
def mod(db) -> User:
    user = User.objects.create_user("mod", "mod@example.org", "mod-password-1", is_staff=True)
    user.groups.add(Group.objects.get(name="moderators"))
    return user


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser("root", "root@example.org", "root-password-1")


@pytest.fixture
def anon_client() -> Client:
    return Client(REMOTE_ADDR="203.0.113.7")


@pytest.fixture
def alice_client(alice: User) -> Client:
    client = Client(REMOTE_ADDR="203.0.113.8")
    client.force_login(alice)
    return client


@pytest.fixture
def mod_client(mod: User) -> Client:
    client = Client()
    client.force_login(mod)
    return client


@pytest.fixture
def root_client(root: User) -> Client:
    client = Client()
    client.force_login(root)
    return client


def reproduction_data(**overrides: object) -> dict[str, object]:
    """A complete reproduction as the form posts it (a re-measurement on an H200)."""
    data: dict[str, object] = {
        "kind": "reproduction",
        "measured_value": "19.2",
        "measured_unit": "µs",
        "measured_statistic": "mean",
        "cases_reproduced": "16",
        "cases_matched": "16",
        "gpu_product": "NVIDIA B200",
        "driver_version": "570.124.06",
        "cuda_version": "12.8",
        "torch_version": "2.7.0",
        "command": "python -m sol_execbench.eval --kernel 062 --repeat 100",
        "link": "https://example.org/logs/run-062.txt",
        "text": "Re-ran the submission on our own B200.",
    }
    data.update(overrides)
    return data


def note_data(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {"kind": "note", "text": "The kernel assumes a contiguous KV cache.", "link": ""}
    data.update(overrides)
    return data


def report_data(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "category": "correctness",
        "description": "Outputs differ from the reference on case 3 when run locally.",
        "contact_email": "",
    }
    data.update(overrides)
    return data
