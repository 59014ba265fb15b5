"""SOL-ExecBench definition folders: ``definition.json`` + ``workload.jsonl`` (+ ``metadata.json``).

The catalogue folders (``definitions/L1/<name>/``) carry all three; the harness examples
(``examples/<language>/<name>/``) only the first two. One folder is one Benchmark (source
``sol-execbench``, native id = the definition's name) with its Workload: per case the uuid,
every axis (constants and expressions of the definition filled in), the tolerance and, from
``metadata.json``, the speed-of-light time and the Scoring Baseline time.
"""

from __future__ import annotations

from typing import Any

from ingest.catalogue import BenchmarkFacts
from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, register
from ingest.formats.sol_common import COLLECTIONS, SOL_AGGREGATION, SOURCE, full_axes, make_case
from ingest.records import Row, type_name
from kernelindex import canonical

FORMAT = "sol-definition"


def detect(loaded: Loaded) -> bool:
    return loaded.is_folder and "definition.json" in loaded.files and "workload.jsonl" in loaded.files


def _lines(loaded: Loaded) -> list[tuple[int, Any]]:
    # A one-line JSONL file parses as one JSON document.
    return [(1, loaded.data)] if loaded.data is not None else loaded.lines


def parse(loaded: Loaded) -> Parsed:
    facts = parse_facts(loaded)
    return Parsed(path=loaded.path, format=FORMAT, apply=None, summary=f"benchmark {facts.native_id}", facts=[facts])


def parse_facts(loaded: Loaded) -> BenchmarkFacts:
    if not detect(loaded):
        raise ImportFailure(loaded.path, "a definition folder needs definition.json and workload.jsonl")
    definition_file = loaded.files["definition.json"]
    definition = Row(definition_file.path, "$", definition_file.data)
    name = definition.string("name")
    axes = definition.obj("axes")
    for axis_name, axis in axes.items():
        if not isinstance(axis, dict) or axis.get("type") not in {"var", "const", "expr"}:
            raise definition.fail(f"axis {axis_name!r} must be an object with type var, const or expr")
    reference = definition.string("reference", optional=True) or ""
    description = definition.get("description") or ""
    if not isinstance(description, str):
        raise definition.fail(f"field 'description' must be a string, not {type_name(description)}")

    metadata: Row | None = None
    per_workload: list[Any] = []
    if "metadata.json" in loaded.files:
        metadata_file = loaded.files["metadata.json"]
        metadata = Row(metadata_file.path, "$", metadata_file.data)
        meta_name = metadata.string("name", optional=True)
        if meta_name is not None and meta_name != name:
            raise metadata.fail(f"metadata name {meta_name!r} is not the definition's name {name!r}")
        sol = metadata.obj("sol", optional=True) or {}
        if sol.get("available", True) and not sol.get("sol_is_dummy", False):
            per_workload = sol.get("per_workload") or []
            if not isinstance(per_workload, list):
                raise metadata.fail("sol.per_workload must be an array")

    workload_file = loaded.files["workload.jsonl"]
    cases = []
    lines = _lines(workload_file)
    if not lines:
        raise ImportFailure(workload_file.path, "no workloads")
    if per_workload and len(per_workload) != len(lines):
        raise ImportFailure(
            loaded.files["metadata.json"].path,
            f"sol.per_workload has {len(per_workload)} entries but workload.jsonl has {len(lines)} workloads",
        )
    for index, (number, value) in enumerate(lines):
        row = Row(workload_file.path, f"line {number}", value)
        uuid = row.string("uuid")
        var_axes = row.obj("axes")
        tolerance = row.obj("tolerance", optional=True)
        case_axes = full_axes(axes, var_axes)
        sol_ms = baseline_ms = None
        if per_workload:
            entry = Row(loaded.files["metadata.json"].path, f"sol.per_workload[{index}]", per_workload[index])
            if entry.integer("index", optional=True) not in (None, index):
                raise entry.fail(f"index {entry.get('index')} where {index} was expected")
            entry_axes = entry.obj("axes", optional=True) or {}
            for axis, axis_value in var_axes.items():
                if axis in entry_axes and entry_axes[axis] != axis_value:
                    raise entry.fail(f"axis {axis} is {entry_axes[axis]!r} but workload {uuid} says {axis_value!r}")
            case_axes = {**case_axes, **entry_axes}
            sol_ms = entry.number("sol_ms", positive=True, optional=True)
            baseline_ms = entry.number("baseline_latency_ms", positive=True, optional=True)
        cases.append(
            make_case(
                index=index, case_id=uuid, axes=case_axes, tolerance=tolerance, sol_ms=sol_ms, baseline_ms=baseline_ms
            )
        )

    collection = ""
    numeric_id = None
    hf_id = definition.get("hf_id") or ""
    if metadata is not None:
        collection = metadata.string("subset", optional=True) or ""
        numeric_id = metadata.integer("task_id", minimum=0, optional=True)
        hf_id = metadata.get("hf_id") or hf_id
    if not collection:
        parts = loaded.path.resolve().parts
        collection = "examples" if "examples" in parts else next((p for p in parts if p in COLLECTIONS), "")
    op_type = definition.get("op_type")
    return BenchmarkFacts(
        source=SOURCE,
        native_id=name,
        numeric_id=numeric_id,
        collection=collection,
        hf_model_id=hf_id if isinstance(hf_id, str) else "",
        tags=[op_type] if isinstance(op_type, str) and op_type else [],
        description=description,
        reference_code=reference,
        definition=canonical.dumps_str(definition_file.data),
        cases=cases,
        aggregation=SOL_AGGREGATION,
        origin=str(loaded.path),
    )


register(
    Format(FORMAT, "SOL-ExecBench definition folder (definition.json, workload.jsonl[, metadata.json])", detect, parse)
)
