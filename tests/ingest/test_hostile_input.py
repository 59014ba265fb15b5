"""Issue 10 on ``manage.py import``: script URLs in bundles, annotations, SOL snapshots and
KernelBench sidecars, and input that used to end in a traceback, are each a clear import error
naming the field, with nothing written."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.models import Run
from tests.hostile import (
    BROKEN_BUNDLES,
    GOOD_URL,
    SCRIPT_URLS,
    deeply_nested_text,
    submitted_bundle,
    ten_megabyte_external_id,
    with_artifact_url,
)
from tests.ingest.conftest import BOARD, KERNELBENCH, snapshot

pytestmark = pytest.mark.django_db


def import_error(path: Path) -> str:
    with pytest.raises(CommandError) as raised:
        call_command("import", str(path), stdout=open("/dev/null", "w"))  # noqa: SIM115
    return str(raised.value)


def write(tmp_path: Path, name: str, content: Any) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize("url", SCRIPT_URLS, ids=repr)
def test_script_urls_are_refused_in_every_importer(tmp_path: Path, url: str) -> None:
    before = snapshot()
    # A bundle's artifact.
    message = import_error(write(tmp_path, "artifact.json", with_artifact_url(url)))
    assert "run spec.artifacts[0].url" in message and "http" in message
    # The provenance annotation of an export.
    bundle = submitted_bundle()
    bundle["run"]["metadata"]["annotations"] = {"kernelindex.dev/provenance-url": url}
    message = import_error(write(tmp_path, "annotated.json", bundle))
    assert "kernelindex.dev/provenance-url" in message and "http" in message
    # A SOL-ExecBench leaderboard snapshot's url.
    board = json.loads(BOARD.read_text())
    board["url"] = url
    message = import_error(write(tmp_path, "kernel-10-B200-v1.1.json", board))
    assert "field 'url'" in message and "http" in message
    # A KernelBench timing file's provenance sidecar.
    folder = tmp_path / "H100_Modal"
    folder.mkdir(exist_ok=True)
    shutil.copy(KERNELBENCH, folder / KERNELBENCH.name)
    sidecar_path = KERNELBENCH.with_name(KERNELBENCH.stem + ".provenance.json")
    sidecar = json.loads(sidecar_path.read_text())
    sidecar["url"] = url
    write(folder, sidecar_path.name, sidecar)
    message = import_error(folder / KERNELBENCH.name)
    assert "field 'url'" in message and "http" in message
    assert snapshot() == before


def test_an_http_artifact_url_imports(tmp_path: Path) -> None:
    call_command("import", str(write(tmp_path, "ok.json", with_artifact_url(GOOD_URL))), stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert Run.objects.count() == 1


@pytest.mark.parametrize(("case", "build", "words"), BROKEN_BUNDLES, ids=[case[0] for case in BROKEN_BUNDLES])
def test_broken_bundles_are_a_clear_import_error(
    tmp_path: Path, case: str, build: Callable[[], dict[str, Any]], words: list[str]
) -> None:
    before = snapshot()
    path = write(tmp_path, "bundle.json", build())
    message = import_error(path)
    assert str(path) in message
    for word in words:
        assert word in message, (word, message[:500])
    assert snapshot() == before


def test_a_file_nested_100000_deep_is_a_clear_import_error(tmp_path: Path) -> None:
    message = import_error(write(tmp_path, "deep.json", deeply_nested_text()))
    assert "nested too deeply" in message
    assert not Run.objects.exists()


def test_a_10_mb_external_id_is_a_clear_import_error(tmp_path: Path) -> None:
    message = import_error(write(tmp_path, "huge.json", ten_megabyte_external_id()))
    assert "externalId" in message and "300" in message
    assert not Run.objects.exists()
