"""Every model change ships with its migration: the guard djangoproject.com keeps."""

from __future__ import annotations

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_it_has_no_pending_migrations() -> None:
    try:
        call_command("makemigrations", "--check", "--dry-run", verbosity=1)
    except SystemExit as exit_:  # makemigrations --check exits 1 when a model has no migration
        pytest.fail(f"models changed without a migration (makemigrations --check exited {exit_.code})")
