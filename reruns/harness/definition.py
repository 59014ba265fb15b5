"""SOL-ExecBench definition folders: definition.json + workload.jsonl (no torch needed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex.axes import evaluate

# SOL-ExecBench CorrectnessSpec defaults (used when a case publishes no tolerance).
DEFAULT_TOLERANCE = {
    "max_atol": 1e-2,
    "max_rtol": 1e-2,
    "required_matched_ratio": 1.0,
    "max_error_cap": None,
}


@dataclass
class Case:
    index: int
    uuid: str
    axes: dict[str, int]
    inputs: dict[str, dict]
    tolerance: dict[str, Any]  # as published in workload.jsonl (may be empty)

    @property
    def effective_tolerance(self) -> dict[str, Any]:
        return effective_tolerance(self.tolerance)

    def scalar_inputs(self) -> dict[str, Any]:
        return {name: spec.get("value") for name, spec in self.inputs.items() if spec.get("type") == "scalar"}


@dataclass
class Definition:
    name: str
    path: Path
    reference: str
    axes: dict[str, dict]
    inputs: dict[str, dict]
    outputs: dict[str, dict]
    custom_inputs_entrypoint: str | None = None
    op_type: str | None = None
    raw: dict = field(default_factory=dict)

    def resolve_axes(self, case_axes: dict[str, int]) -> dict[str, int]:
        return resolve_axes(self.axes, case_axes)

    def input_shapes(self, resolved: dict[str, int]) -> dict[str, tuple[int, ...] | None]:
        return {n: shape_of(s.get("shape"), resolved) for n, s in self.inputs.items()}

    def output_shapes(self, resolved: dict[str, int]) -> dict[str, tuple[int, ...] | None]:
        return {n: shape_of(s.get("shape"), resolved) for n, s in self.outputs.items()}


def effective_tolerance(published: dict | None) -> dict[str, Any]:
    tol = dict(DEFAULT_TOLERANCE)
    for key, value in (published or {}).items():
        if key in tol and value is not None:
            tol[key] = value
    return tol


def load_definition(directory: str | Path) -> Definition:
    path = Path(directory)
    raw = json.loads((path / "definition.json").read_text(encoding="utf-8"))
    return Definition(
        name=raw["name"],
        path=path,
        reference=raw["reference"],
        axes=raw.get("axes") or {},
        inputs=raw.get("inputs") or {},
        outputs=raw.get("outputs") or {},
        custom_inputs_entrypoint=raw.get("custom_inputs_entrypoint"),
        op_type=raw.get("op_type"),
        raw=raw,
    )


def load_workload(directory: str | Path) -> list[Case]:
    path = Path(directory) / "workload.jsonl"
    cases: list[Case] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        cases.append(
            Case(
                index=len(cases),
                uuid=str(row["uuid"]),
                axes=dict(row.get("axes") or {}),
                inputs=dict(row.get("inputs") or {}),
                # SOL-ExecBench's published workloads say "tolerance"; its pydantic
                # model calls the same object "correctness".
                tolerance=dict(row.get("tolerance") or row.get("correctness") or {}),
            )
        )
    return cases


def eval_expression(expression: str, names: dict[str, int]) -> int:
    """Evaluate an axis expression such as "num_kv_heads * head_dim" (``kernelindex.axes``) to
    the integer a shape needs."""
    value = evaluate(expression, names)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"axis expression {expression!r} is not an integer: {value}")
        value = int(value)
    return int(value)


def resolve_axes(axes: dict[str, dict], case_axes: dict[str, int]) -> dict[str, int]:
    """All axes of a definition as integers: const values, the case's var values, exprs."""
    resolved: dict[str, int] = {}
    for name, spec in axes.items():
        kind = spec.get("type")
        if kind == "const":
            resolved[name] = int(spec["value"])
        elif kind == "var":
            if name not in case_axes:
                raise ValueError(f"case gives no value for var axis {name!r}")
            resolved[name] = int(case_axes[name])
    # Case axes may also carry values for consts/exprs (kernel files do): keep ours.
    for name, value in case_axes.items():
        resolved.setdefault(name, int(value))
    pending = {n: s for n, s in axes.items() if s.get("type") == "expr" and n not in resolved}
    for _ in range(len(pending) + 1):
        if not pending:
            break
        for name in list(pending):
            try:
                resolved[name] = eval_expression(pending[name]["expression"], resolved)
                del pending[name]
            except KeyError:
                continue
    if pending:
        raise ValueError(f"cannot resolve axes {sorted(pending)}")
    return resolved


def shape_of(shape: list | None, resolved: dict[str, int]) -> tuple[int, ...] | None:
    """Concrete shape from a definition shape (axis names, ints or expressions)."""
    if shape is None:
        return None
    dims = []
    for dim in shape:
        if isinstance(dim, int):
            dims.append(dim)
        elif isinstance(dim, str) and dim in resolved:
            dims.append(resolved[dim])
        else:
            dims.append(eval_expression(str(dim), resolved))
    return tuple(dims)
