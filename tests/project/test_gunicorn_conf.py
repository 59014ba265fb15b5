"""gunicorn.conf.py binds to the loopback address on PORT, so scripts/serve can use any port."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

CONF = Path(__file__).resolve().parent.parent.parent / "gunicorn.conf.py"


def test_it_binds_to_loopback_port_8000_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PORT", "HOST", "WEB_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    conf = runpy.run_path(str(CONF))
    assert conf["bind"] == "127.0.0.1:8000"
    assert 1 <= conf["workers"] <= 4


def test_it_takes_port_and_workers_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "8123")
    monkeypatch.setenv("WEB_CONCURRENCY", "2")
    conf = runpy.run_path(str(CONF))
    assert conf["bind"] == "127.0.0.1:8123"
    assert conf["workers"] == 2


def test_the_master_compiles_the_jinja_templates_before_the_workers_fork() -> None:
    from web import jinja

    jinja.environment().cache.clear()
    runpy.run_path(str(CONF))["when_ready"](None)
    compiled = {name for _, name in jinja.environment().cache.keys()}
    assert {"runs/run_detail.html", "runs/benchmark_detail.html", "runs/_replications.html"} <= compiled


def test_the_master_freezes_what_it_holds_before_the_workers_fork() -> None:
    import gc

    before = gc.get_freeze_count()
    try:
        runpy.run_path(str(CONF))["when_ready"](None)
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()  # this test process goes on collecting as before


def test_the_master_compiles_the_django_templates_and_imports_the_cache_client_before_the_fork(
    settings,
) -> None:
    import sys

    from django.template import engines

    from kernelindex import prefork

    (loader,) = engines["django"].engine.template_loaders  # the cached loader, around the others
    loader.reset()
    names = prefork.prepare()
    assert {"base.html", "web/run_list.html", "web/gpu_detail.html", "registration/login.html"} <= set(names)
    assert not any(name.startswith("jinja/") for name in names)
    assert set(names) <= set(loader.get_template_cache)
    for config in settings.CACHES.values():
        assert config["BACKEND"].rsplit(".", 1)[0] in sys.modules
