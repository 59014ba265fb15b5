"""The locks pin everything the top-level requirements name, each with its hashes (scripts/lock)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def top_level(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            names |= top_level(path.parent / line[3:].strip())
        elif line:
            names.add(normalise(NAME.match(line).group(1)))
    return names


def locked(path: Path) -> dict[str, list[str]]:
    """name -> the lines of its entry (pin line and hashes)."""
    entries: dict[str, list[str]] = {}
    current = ""
    for line in path.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            current = normalise(NAME.match(line).group(1))
            entries[current] = [line]
        elif line.strip().startswith("--hash") and current:
            entries[current].append(line.strip())
    return entries


@pytest.mark.parametrize("lock", ["requirements.txt", "requirements-dev.txt"])
def test_every_top_level_requirement_is_pinned_with_hashes(lock: str) -> None:
    entries = locked(REPO / lock)
    for name in top_level(REPO / lock.replace(".txt", ".in")):
        assert name in entries, f"{name} is in the .in file but not in {lock}: run scripts/lock"
    for name, lines in entries.items():
        assert "==" in lines[0], f"{lock}: {name} is not pinned"
        assert any(line.startswith("--hash=sha256:") for line in lines), f"{lock}: {name} has no hash"


def test_the_dev_lock_has_the_runtime_versions() -> None:
    runtime, dev = locked(REPO / "requirements.txt"), locked(REPO / "requirements-dev.txt")
    for name, lines in runtime.items():
        pin = lines[0].split(";")[0].split()[0]
        assert dev[name][0].split(";")[0].split()[0] == pin, name
