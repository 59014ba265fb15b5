"""kernelindex.collector.collector_paused, and the import pipeline running inside it."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from ingest import engine, pipeline
from kernelindex.collector import collector_paused
from tests.ingest.conftest import BOARD


def test_the_collector_is_off_inside_and_back_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the inner one leaves it to the outer
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_back_after_an_error() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a bad file")
    assert gc.isenabled()


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # whoever turned it off turns it on
    finally:
        gc.enable()


@pytest.mark.django_db
def test_an_import_parses_and_writes_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, bool]] = []
    load, write = pipeline.load, engine._import_batch

    def recording_load(path: Path) -> Any:
        seen.append(("parse", gc.isenabled()))
        return load(path)

    def recording_write(*args: Any, **kwargs: Any) -> Any:
        seen.append(("write", gc.isenabled()))
        return write(*args, **kwargs)

    monkeypatch.setattr(pipeline, "load", recording_load)
    monkeypatch.setattr(engine, "_import_batch", recording_write)
    pipeline.import_paths([str(BOARD)])
    assert seen == [("parse", False), ("write", False)]
    assert gc.isenabled()
