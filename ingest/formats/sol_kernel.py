"""SOL-ExecBench kernel API responses (``/api/kernels/{id}``), bare or as a stored snapshot.

Gives the kernel's Benchmark (numeric id, tags, collection, description) and its workload's
cases with every axis and, per case, the speed-of-light time (``sol_ms``) and the Scoring
Baseline time (``baseline_latency_ms``). The response's top-level ``baseline_latency_ms`` is the
SOL Bound geometric mean despite its name (data/README.md) and is not used.
"""

from __future__ import annotations

from typing import Any

from ingest.catalogue import BenchmarkFacts
from ingest.formats.base import Format, Loaded, Parsed, register
from ingest.formats.sol_common import SOL_AGGREGATION, SOURCE, collection_from_tags, make_case
from ingest.records import Row
from kernelindex.gpus import normalise_product

FORMAT = "sol-kernel"


def _kernel(value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("response"), dict):
        value = value["response"]
    data = value.get("data")
    if isinstance(data, dict) and "workloads" in data and "rankings" not in data:
        return data
    return None


def detect(loaded: Loaded) -> bool:
    return loaded.data is not None and _kernel(loaded.data) is not None


def parse(loaded: Loaded) -> Parsed:
    facts = parse_facts(loaded)
    return Parsed(path=loaded.path, format=FORMAT, apply=None, summary=f"benchmark {facts.native_id}", facts=[facts])


def parse_facts(loaded: Loaded) -> BenchmarkFacts:
    path = loaded.path
    top = Row(path, "$", loaded.data)
    response = Row(path, "response", top.obj("response")) if "response" in top.value else top
    data = Row(path, "data", response.obj("data"))
    name = data.string("name")
    numeric_id = data.integer("id", minimum=0)
    unit = data.get("latency_unit", "ms")
    if unit != "ms":
        raise data.fail(f"latency_unit {unit!r} is not supported (expected 'ms')")
    tags = data.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise data.fail("field 'tags' must be an array of strings")
    gpu_types = data.get("gpu_types") or []
    if not isinstance(gpu_types, list) or not all(isinstance(gpu, str) for gpu in gpu_types):
        raise data.fail("field 'gpu_types' must be an array of strings")
    # The per-case SOL and baseline times are measured on the kernel's GPU when it has one.
    hardware = normalise_product(gpu_types[0]) if len(gpu_types) == 1 else None
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise data.fail("field 'description' must be a string")
    cases = []
    for index, value in enumerate(data.array("workloads")):
        row = Row(path, f"data.workloads[{index}]", value)
        cases.append(
            make_case(
                index=index,
                case_id=row.string("uuid", optional=True),
                axes=row.obj("axes"),
                tolerance=row.obj("tolerance", optional=True),
                sol_ms=row.number("sol_ms", positive=True, optional=True),
                baseline_ms=row.number("baseline_latency_ms", positive=True, optional=True),
                hardware=hardware,
            )
        )
    if not cases:
        raise data.fail("'workloads' is empty")
    return BenchmarkFacts(
        source=SOURCE,
        native_id=name,
        numeric_id=numeric_id,
        collection=collection_from_tags(tags),
        tags=list(tags),
        description=description,
        cases=cases,
        aggregation=SOL_AGGREGATION,
        origin=str(path),
    )


register(
    Format(FORMAT, "SOL-ExecBench kernel API response (/api/kernels/{id}), bare or stored snapshot", detect, parse)
)
