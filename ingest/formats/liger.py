"""Liger-Kernel benchmark CSVs (``benchmark/data/*.csv`` of linkedin/Liger-Kernel).

Columns: kernel_name, kernel_provider, kernel_operation_mode, metric_name (speed|memory),
metric_unit (ms|MB), x_name, x_label, x_value, y_value_50, y_value_20, y_value_80,
extra_benchmark_config_str (JSON), gpu_name, timestamp, liger_version. Rows are appended over two
years by different contributors on different GPUs and Liger versions (``data/corpus-README.md``).

One run per row: one provider (liger, huggingface, torch_compile…) measured at one x value on one
GPU with one Liger version at one time. ``y_value_50`` is the median (``triton.testing.do_bench``
quantiles 0.5/0.2/0.8), the primary statistic; p20 and p80 are kept. "MB" is really MiB
(``max_memory_allocated() / 2**20``), so memory rows say MiB.

Comparability. The benchmark is (kernel, operation mode, metric, x axis): speed and memory are
different metrics, never one group. Within it a comparison group is one x value, one extra
benchmark configuration (batch size, sequence length… as the row states it), one GPU and one Liger
version: the providers measured side by side by one run of the benchmark script are what the
source compares. A Liger version is part of the group because the script, the Liger kernels and
usually the torch underneath change with it; rows of several timestamps of one version (re-runs)
rank together, best per provider. Speed rows rank by median latency; memory rows keep their MiB in
the source-native metrics and are not ranked (the index ranks latencies, not memory).

A row's identity is every column that tells two measurements apart (kernel, provider, mode,
metric, x, extra configuration, GPU, version, timestamp): the same row in two files
(``grpo_vocab_chunk.csv`` repeats much of ``all_benchmark_data.csv``) is one run.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

from ingest.catalogue import BenchmarkFacts
from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, register, sidecar_for
from ingest.records import DigestCache, Row, environment_document, iso, make_bundle, ms_to_ns
from kernelindex import canonical
from runs.manifests import A_PROVENANCE_URL, KINDS, VerifiedBundle

FORMAT = "liger-benchmark-csv"
SOURCE = "liger-kernel"
FAMILY = "liger_kernel_benchmark"
COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)
# (metric, unit as written) → unit. ``speed_graph`` (200 rope rows of 2026-08, not in the corpus
# README) is a speed measured another way (through CUDA graphs, by its name): its own metric, so
# its own benchmark, never one group with ``speed``.
UNITS = {("speed", "ms"): "ms", ("speed_graph", "ms"): "ms", ("memory", "MB"): "MiB"}


def detect(loaded: Loaded) -> bool:
    return loaded.path.suffix == ".csv" and loaded.text.split("\n", 1)[0].strip().split(",") == list(COLUMNS)


def parse(loaded: Loaded) -> Parsed:
    facts, bundles = parse_file(loaded)
    return Parsed(
        path=loaded.path,
        format=FORMAT,
        apply=None,
        summary=f"{len(bundles)} row(s)",
        facts=facts,
        bundles=bundles,
        label=f"import: {loaded.path.name}",
        reason=f"imported from Liger-Kernel benchmark {loaded.path.name}",
    )


def provenance_url(path: Any) -> str:
    """The URL (with commit) a KernelIndex provenance sidecar gives, if there is one."""
    sidecar = sidecar_for(path)
    if not sidecar.is_file():
        return ""
    url = json.loads(sidecar.read_text(encoding="utf-8")).get("url") or ""
    # As given: the import checks every provenance URL (runs.manifests.check_provenance_url) and
    # refuses anything but http(s), naming the field, rather than dropping it silently here.
    return url if isinstance(url, str) else repr(url)


def _number(row: Row, key: str) -> float:
    text = row.string(key)
    try:
        value = float(text)
    except ValueError:
        raise row.fail(f"field {key!r} must be a number, not {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        raise row.fail(f"field {key!r} must be a finite non-negative number, not {text!r}")
    return value


def parse_file(loaded: Loaded) -> tuple[list[BenchmarkFacts], list[VerifiedBundle]]:
    path = loaded.path
    if not detect(loaded):
        raise ImportFailure(path, f"not a Liger-Kernel benchmark CSV: the header must be {','.join(COLUMNS)}")
    url = provenance_url(path)
    annotations = {A_PROVENANCE_URL: url} if url else {}
    cache = DigestCache()
    shared: dict[tuple[str, ...], tuple[dict[str, Any], dict[str, Any]]] = {}
    facts: dict[str, BenchmarkFacts] = {}
    bundles: list[VerifiedBundle] = []
    for number, record in enumerate(csv.DictReader(io.StringIO(loaded.text)), start=2):
        row = Row(path, f"line {number}", record)
        if None in record or any(value is None for value in record.values()):
            raise row.fail(f"must have exactly {len(COLUMNS)} columns")
        kernel, provider, mode, metric, unit_text, x_name = (
            row.string(key)
            for key in (
                "kernel_name",
                "kernel_provider",
                "kernel_operation_mode",
                "metric_name",
                "metric_unit",
                "x_name",
            )
        )
        unit = UNITS.get((metric, unit_text))
        if unit is None:
            raise row.fail(f"metric {metric!r} in {unit_text!r} is not one the format knows {sorted(UNITS)}")
        x_value = row.string("x_value")
        y50, y20, y80 = (_number(row, key) for key in ("y_value_50", "y_value_20", "y_value_80"))
        extra_text = record["extra_benchmark_config_str"] or "{}"
        try:
            extra = canonical.loads(extra_text)
        except (ValueError, canonical.CanonicalError):
            raise row.fail(f"extra_benchmark_config_str is not JSON: {extra_text[:80]!r}") from None
        gpu = row.string("gpu_name")
        version = row.string("liger_version")
        stamp = row.string("timestamp")
        try:
            observed = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
        except ValueError:
            raise row.fail(f"timestamp {stamp!r} is not 'YYYY-MM-DD HH:MM:SS'") from None
        native_id = f"{kernel}/{mode}/{metric}/{x_name}"
        if native_id not in facts:
            facts[native_id] = BenchmarkFacts(
                source=SOURCE,
                native_id=native_id,
                title=f"{kernel} {mode} {metric} vs {record['x_label'] or x_name}",
                collection="Liger-Kernel",
                origin=str(path),
            )
        extra_json = canonical.dumps_str(extra)
        key = (gpu, version, x_name, x_value, extra_json, unit)
        if key not in shared:
            shared[key] = (
                _protocol(version, x_name, x_value, extra, extra_json, unit),
                _environment(gpu),
            )
        protocol, environment = shared[key]
        stats = {"median": y50, "p20": y20, "p80": y80}
        timing: dict[str, Any] = {"primaryStatistic": "median"}
        if unit == "ms":
            timing["latencyNs"] = {name: ms_to_ns(value) for name, value in stats.items()}
        metrics = {"y_value_50": y50, "y_value_20": y20, "y_value_80": y80, "unit": unit}
        external = "/".join((kernel, provider, mode, metric, f"{x_name}={x_value}", extra_json, gpu, version, stamp))
        product = environment["spec"]["hardware"]["product"]
        run = {
            "apiVersion": canonical.API_VERSION,
            "kind": KINDS["run"],
            "metadata": {
                "name": f"liger-{kernel}-{provider}-{mode}-{metric}"[:200],
                "title": f"{provider} · {kernel} {mode} {metric} · {x_name}={x_value} · "
                + product.removeprefix("NVIDIA "),
            },
            "spec": {
                "status": "passed",
                "timing": timing,
                "observedAt": iso(observed),
                "sourceNative": {
                    "source": SOURCE,
                    "benchmark": native_id,
                    "externalId": external,
                    "submitter": provider,
                    "metrics": metrics,
                },
            },
        }
        docs = {"run": run, "protocol": protocol, "environment": environment}
        bundles.append(make_bundle(docs, cache=cache, annotations=annotations, origin=f"{path}, {row.where}"))
    if not bundles:
        raise ImportFailure(path, "no rows in the file")
    return list(facts.values()), bundles


def _protocol(version: str, x_name: str, x_value: str, extra: Any, extra_json: str, unit: str) -> dict[str, Any]:
    config = canonical.sha256_hex(extra_json.encode("utf-8"))[:8]
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["protocol"],
        "metadata": {
            "name": f"liger-benchmark-{version}-{x_name}-{x_value}-{config}"[:200],
            "title": f"Liger-Kernel benchmark {version}, {x_name}={x_value}",
        },
        "spec": {
            # The version names what, besides benchmark and GPU, a row must share to compare:
            # Liger version, x value and the extra configuration (by digest: it can be long).
            "harness": {"name": "Liger-Kernel benchmark", "version": f"{version} · {x_name}={x_value} · {config}"},
            "measurement": {
                "timer": "triton.testing.do_bench" if unit == "ms" else "torch.cuda.max_memory_allocated",
                "primaryStatistic": "median",
                "quantiles": [0.5, 0.2, 0.8],
                "unit": unit,
                "x": {"name": x_name, "value": x_value},
                "extraConfig": extra,
            },
            "correctness": {"reference": "none published with the benchmark rows"},
            "ranking": {"metric": "latency", "direction": "asc", "bestPer": "submitter"},
            "comparability": {
                "family": FAMILY,
                "notes": (
                    "Liger-Kernel benchmark rows: comparable only within one kernel, operation mode, metric, x value, "
                    "extra configuration, GPU and Liger version. Memory rows (MiB) are kept but not ranked."
                ),
            },
        },
    }


def _environment(gpu: str) -> dict[str, Any]:
    return environment_document(gpu, name_prefix="liger")


register(Format(FORMAT, "Liger-Kernel benchmark CSV (kernel_name, kernel_provider, …, liger_version)", detect, parse))
