"""The JSONL export of the whole shipped dataset re-imports into an empty database unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from ingest.pipeline import export_lines
from runs.models import Run
from tests.api.conftest import import_shipped_data


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_jsonl_export_reimports_with_identical_digests(client: Any, tmp_path: Path) -> None:
    import_shipped_data()
    before = dict(Run.objects.values_list("public_id", "digest"))
    assert len(before) == Run.objects.visible().count() > 200  # every shipped run is published
    response = client.get("/api/v1/runs/export/bundles/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    exported = b"".join(response.streaming_content)
    # The download is exactly what `manage.py export` writes.
    assert exported.decode() == "".join(export_lines())
    path = tmp_path / "kernelindex.jsonl"
    path.write_bytes(exported)

    call_command("flush", interactive=False, verbosity=0)
    assert not Run.objects.exists()
    call_command("import", str(path), stdout=open("/dev/null", "w"))  # noqa: SIM115

    assert dict(Run.objects.values_list("public_id", "digest")) == before
    again = b"".join(client.get("/api/v1/runs/export/bundles/").streaming_content)
    assert again == exported
