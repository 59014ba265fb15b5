"""What runs: the --solution SPEC resolved to source files and an entry point (no torch).

SPEC is one of
  reference            the definition's own reference ``run``
  torch-compile        ``torch.compile`` of the reference ``run`` (default inductor settings)
  torch-compile-eager-numerics
                       the same with inductor's ``emulate_precision_casts`` (rounds
                       low-precision intermediates as eager PyTorch does)
  baseline:KERNEL_JSON the scoring baseline source of a SOL-ExecBench kernel file
                       (field ``response.data.baseline``)
  PATH.json            a solution in SOL-ExecBench's solution format
                       (``sources: [{path, content}]``, ``spec.entry_point``, ``spec.language``)
  PATH.py              a single Python file defining ``run`` (value-returning)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from kernelindex.canonical import dumps as canonical_bytes
from kernelindex.canonical import sha256_hex

from .definition import Definition

SUPPORTED_LANGUAGES = {"python": "pytorch", "pytorch": "pytorch", "torch": "pytorch", "triton": "triton"}


class ImplementationError(ValueError):
    """The SPEC cannot be turned into something runnable (reported as COMPILE_ERROR)."""


@dataclass
class Implementation:
    spec: str
    kind: str  # reference | torch-compile | scoring-baseline | solution
    revision: str
    name: str
    languages: list[str]
    sources: list[dict]  # [{"path", "content"}]
    entry_file: str
    entry_function: str
    destination_passing_style: bool = False
    compile: bool = False
    project: str = "KernelIndex baselines"
    submitter: str = "KernelIndex"
    extra: dict = field(default_factory=dict)

    @property
    def code_digest(self) -> str:
        """sha256 of the source code bytes (one file: its UTF-8 bytes; several: JCS of the
        ``[{path, content}]`` list sorted by path)."""
        if len(self.sources) == 1:
            data = self.sources[0]["content"].encode("utf-8")
        else:
            ordered = sorted(
                ({"path": s["path"], "content": s["content"]} for s in self.sources),
                key=lambda s: s["path"],
            )
            data = canonical_bytes(ordered)
        return "sha256:" + sha256_hex(data)

    def to_dict(self) -> dict:
        return {
            "spec": self.spec,
            "kind": self.kind,
            "revision": self.revision,
            "name": self.name,
            "languages": list(self.languages),
            "codeDigest": self.code_digest,
            "project": self.project,
            "submitter": self.submitter,
            "compile": self.compile,
        }


def _entry(entry_point: str) -> tuple[str, str]:
    if "::" not in entry_point:
        raise ImplementationError(f"entry point {entry_point!r} is not FILE::FUNCTION")
    file_part, func = entry_point.rsplit("::", 1)
    return file_part, func


def _baseline_source(kernel_json: dict) -> tuple[str, str | None]:
    for path in (("response", "data"), ("data",), ()):
        node = kernel_json
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get("baseline"), str):
            return node["baseline"], node.get("name")
    raise ImplementationError("kernel file has no response.data.baseline source")


def resolve_implementation(spec: str, definition: Definition) -> Implementation:
    if spec in ("reference", "torch-compile", "torch-compile-eager-numerics"):
        compiled = spec != "reference"
        extra: dict = {}
        if compiled:
            extra = {"torchCompile": {"mode": "default", "dynamic": None}}
        if spec == "torch-compile-eager-numerics":
            extra["torchCompile"]["inductorConfig"] = {"emulate_precision_casts": True}
        return Implementation(
            spec=spec,
            kind="reference" if spec == "reference" else "torch-compile",
            revision=spec,
            name=spec,
            languages=["pytorch"],
            sources=[{"path": "reference.py", "content": definition.reference}],
            entry_file="reference.py",
            entry_function="run",
            compile=compiled,
            extra=extra,
        )
    if spec.startswith("baseline:"):
        path = Path(spec.split(":", 1)[1])
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ImplementationError(f"cannot read kernel file {path}: {exc}") from exc
        source, name = _baseline_source(data)
        if name is not None and name != definition.name:
            raise ImplementationError(f"kernel file {path} is for {name!r}, not definition {definition.name!r}")
        return Implementation(
            spec=spec,
            kind="scoring-baseline",
            revision="scoring-baseline",
            name="scoring-baseline",
            languages=["pytorch"],
            sources=[{"path": "baseline.py", "content": source}],
            entry_file="baseline.py",
            entry_function="run",
        )
    path = Path(spec)
    if not path.is_file():
        raise ImplementationError(f"unknown solution spec {spec!r} (no such file)")
    if path.suffix == ".py":
        return Implementation(
            spec=spec,
            kind="solution",
            revision=path.stem,
            name=path.stem,
            languages=["pytorch"],
            sources=[{"path": path.name, "content": path.read_text(encoding="utf-8")}],
            entry_file=path.name,
            entry_function="run",
            project="unknown",
            submitter="unknown",
        )
    try:
        sol = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ImplementationError(f"solution {path} is not JSON: {exc}") from exc
    sol_spec = sol.get("spec") or {}
    language = str(sol_spec.get("language", "python")).lower()
    if language not in SUPPORTED_LANGUAGES:
        raise ImplementationError(f"solution language {language!r} is not supported (pytorch, triton)")
    sources = [{"path": str(s["path"]), "content": str(s["content"])} for s in sol.get("sources") or []]
    if not sources:
        raise ImplementationError("solution has no sources")
    for s in sources:
        p = Path(s["path"])
        if p.is_absolute() or ".." in p.parts:
            raise ImplementationError(f"solution source path {s['path']!r} escapes its folder")
    entry_file, entry_function = _entry(str(sol_spec.get("entry_point", sources[0]["path"] + "::run")))
    if entry_file not in {s["path"] for s in sources}:
        raise ImplementationError(f"entry file {entry_file!r} is not among the sources")
    if sol.get("definition") not in (None, definition.name):
        raise ImplementationError(f"solution is for {sol.get('definition')!r}, not {definition.name!r}")
    languages = [SUPPORTED_LANGUAGES[language]]
    if languages != ["pytorch"]:
        languages.append("pytorch")
    author = str(sol.get("author") or "unknown")
    return Implementation(
        spec=spec,
        kind="solution",
        revision=str(sol.get("name") or path.stem),
        name=str(sol.get("name") or path.stem),
        languages=languages,
        sources=sources,
        entry_file=entry_file,
        entry_function=entry_function,
        destination_passing_style=bool(sol_spec.get("destination_passing_style", True)),
        project=author,
        submitter=author,
    )
