"""The import framework behind ``manage.py import``.

Each format knows how to recognise a file (``detect``), how to read and fully validate it
without writing anything (``parse``), and how to write what it parsed (``apply``). The command
parses every path first and only then applies them all in one transaction, so a bad file
anywhere stops the whole import with nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex import canonical


class ImportFailure(ValueError):
    """Bad input. The message names the file, the row and the problem."""

    def __init__(self, path: Path | str, problem: str, *, row: str | int | None = None) -> None:
        where = str(path)
        if row is not None:
            where += f", row {row}"
        super().__init__(f"{where}: {problem}")


@dataclass
class Loaded:
    """A file read from disk: its text and parsed JSON (or JSONL lines)."""

    path: Path
    text: str
    data: Any = None  # parsed JSON document, or None for JSONL
    lines: list[tuple[int, Any]] = field(default_factory=list)  # (line number, value) for JSONL
    # A folder imported as one unit (a definition folder, a trace folder): file name → Loaded.
    files: dict[str, Loaded] = field(default_factory=dict)

    @property
    def is_folder(self) -> bool:
        return self.path.is_dir()


@dataclass
class Parsed:
    """What a format parsed from one file, ready to apply."""

    path: Path
    format: str
    # (options) → one-line summary; None for catalogue files, whose facts apply together.
    apply: Callable[[dict[str, Any]], str] | None
    summary: str = ""
    # Benchmarks and workloads the file describes (ingest.catalogue.BenchmarkFacts). Every file's
    # facts of one import are merged and written before any run, so runs find their benchmark
    # and a kernel's catalogue entry and kernel API response give one workload version.
    facts: list[Any] = field(default_factory=list)
    # Run bundles the file gives (runs.manifests.VerifiedBundle), and what their revisions record.
    # ``manage.py import`` writes the bundles of all its files in shared batches.
    bundles: list[Any] = field(default_factory=list)
    trusted: bool = False  # take kernelindex.dev/… annotations as they are (export files)
    label: str = ""
    reason: str = ""
    # Rows imported with a data-quality note (a source identity that does not hold): each one
    # line of the import's output, prefixed "warning:".
    warnings: list[str] = field(default_factory=list)


@dataclass
class Format:
    name: str
    description: str
    detect: Callable[[Loaded], bool]
    parse: Callable[[Loaded], Parsed]


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    FORMATS[fmt.name] = fmt
    return fmt


# Folders whose files describe one thing together; ``manage.py import`` treats them as a unit.
UNIT_MARKERS = ("definition.json", "summary.json")


def is_unit_folder(path: Path) -> bool:
    return path.is_dir() and any((path / marker).is_file() for marker in UNIT_MARKERS)


SIDECAR_SUFFIX = ".provenance.json"
# Files a folder import reads; anything else found in a folder is reported as skipped.
DATA_SUFFIXES = {".json", ".jsonl", ".csv"}


def is_sidecar(path: Path) -> bool:
    """``baseline_time_torch.provenance.json`` describes ``baseline_time_torch.json``."""
    return path.name.endswith(SIDECAR_SUFFIX)


def sidecar_for(path: Path) -> Path:
    return path.with_name(path.stem + SIDECAR_SUFFIX)


def load_folder(path: Path) -> Loaded:
    """Every .json/.jsonl file directly inside a unit folder, each read as strictly as ``load``."""
    loaded = Loaded(path=path, text="")
    for child in sorted(path.iterdir()):
        if child.is_file() and child.suffix in {".json", ".jsonl"}:
            loaded.files[child.name] = load(child)
    return loaded


def load(path: Path) -> Loaded:
    """Read a JSON or JSONL file strictly (no NaN/Infinity, no \\u0000, no unsafe integers)."""
    if path.is_dir():
        return load_folder(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ImportFailure(path, f"not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ImportFailure(path, f"cannot be read: {error.strerror}") from None
    if not text.strip():
        raise ImportFailure(path, "the file is empty")
    loaded = Loaded(path=path, text=text)
    if path.suffix == ".csv":
        return loaded  # CSV formats read ``text`` themselves
    try:
        loaded.data = canonical.loads(text)
        return loaded
    except json.JSONDecodeError as error:
        whole_error = error
    except canonical.CanonicalError as error:
        raise ImportFailure(path, str(error)) from None
    # Not one JSON document: try JSON Lines, one value per non-empty line.
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if len(lines) < 2 and not path.suffix == ".jsonl":
        raise ImportFailure(
            path, f"invalid JSON: {whole_error.msg} at line {whole_error.lineno} column {whole_error.colno}"
        )
    for number, line in lines:
        try:
            loaded.lines.append((number, canonical.loads(line)))
        except json.JSONDecodeError as error:
            raise ImportFailure(
                path, f"invalid JSON: {error.msg} at column {error.colno}", row=f"line {number}"
            ) from None
        except canonical.CanonicalError as error:
            raise ImportFailure(path, str(error), row=f"line {number}") from None
    return loaded


def detect(loaded: Loaded) -> Format:
    for fmt in FORMATS.values():
        if fmt.detect(loaded):
            return fmt
    raise ImportFailure(
        loaded.path,
        "unknown format: not a manifest bundle or any source format KernelIndex knows "
        f"({', '.join(sorted(FORMATS))}); use --format to force one",
    )
