"""The architecture, enforced: imports go one way only, and no module or class grows past what
a reader can hold.

    kernelindex ← runs ← ingest ← attestations ← web, api

(``reruns/harness`` runs on GPU hosts without Django and may use only the Django-free part of
``kernelindex``.) Every import counts, including ones inside functions, so a lazy import cannot
hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Each app and the apps it may import (besides itself).
ALLOWED = {
    "kernelindex": set(),
    "runs": {"kernelindex"},
    "ingest": {"kernelindex", "runs"},
    "attestations": {"kernelindex", "runs", "ingest"},
    "web": {"kernelindex", "runs", "ingest", "attestations"},
    "api": {"kernelindex", "runs", "ingest", "attestations"},
    "reruns": {"kernelindex"},
}
APPS = set(ALLOWED)
# The Django-free part of kernelindex that the rerun harness shares.
HARNESS_SHARED = {"kernelindex.canonical", "kernelindex.gpus", "kernelindex.axes"}
# kernelindex's project wiring (settings, root URLconf, WSGI) names the apps it assembles.
WIRING = {"kernelindex/urls.py", "kernelindex/settings.py", "kernelindex/wsgi.py"}

MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300


def _sources() -> list[Path]:
    return sorted(
        path
        for app in APPS
        for path in (REPO / app).rglob("*.py")
        if "migrations" not in path.parts and "__pycache__" not in path.parts
    )


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
            "import_module",
            "include",
        }:
            # importlib.import_module("runs.x") and include("web.urls") import by name.
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def _violations() -> list[str]:
    problems = []
    for path in _sources():
        relative = path.relative_to(REPO).as_posix()
        app = relative.split("/")[0]
        if relative in WIRING:
            continue
        for line, module in _imported_modules(path):
            target = module.split(".")[0]
            if target not in APPS or target == app:
                continue
            if target not in ALLOWED[app]:
                problems.append(f"{relative}:{line} imports {module} ({app} may not depend on {target})")
            elif app == "reruns" and not any(module.startswith(shared) for shared in HARNESS_SHARED):
                problems.append(
                    f"{relative}:{line} imports {module} (the harness may use only {sorted(HARNESS_SHARED)})"
                )
    return problems


def test_imports_go_one_way_only() -> None:
    assert _violations() == []


def test_the_check_sees_a_lazy_upward_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: an import inside a function, from a lower layer to a higher one, is found."""
    fake = tmp_path / "runs"
    fake.mkdir()
    (fake / "bad.py").write_text("def f():\n    from attestations.models import IssueReport\n    return IssueReport\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    monkeypatch.setattr(f"{__name__}.APPS", {"runs"} | {"attestations"})
    (tmp_path / "attestations").mkdir()
    assert _violations() == [
        "runs/bad.py:2 imports attestations.models.IssueReport (runs may not depend on attestations)"
    ]


def test_no_module_or_class_is_too_long() -> None:
    too_long = []
    for path in _sources() + sorted((REPO / "tests").rglob("*.py")) + sorted((REPO / "bench").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(REPO).as_posix()
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{relative}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                too_long.append(f"{relative}: class {node.name} has {node.end_lineno - node.lineno + 1} lines")
    assert too_long == []
