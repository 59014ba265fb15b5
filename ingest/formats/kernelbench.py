"""KernelBench baseline timings (``results/timing/<config>/baseline_time_torch.json``).

``{"level1": {"1_Square_matrix_multiplication_.py": {mean, std, min, max, num_trials, hardware,
device}, …}, …}`` in milliseconds. One run per problem (benchmark native id
``level1/1_Square_matrix_multiplication_``), hardware from the file.

Problem sizes changed between KernelBench versions, so the KernelBench commit and the timing
configuration (the ``H100_Modal`` folder, ``num_trials``) are part of the comparison key, via the
harness version. The file does not carry its version: a provenance sidecar next to it
(``baseline_time_torch.provenance.json``, checked against the file's SHA-256) does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ingest.catalogue import BenchmarkFacts
from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, load, register, sidecar_for
from ingest.records import DigestCache, Row, make_bundle, ms_to_ns
from kernelindex import canonical, links
from kernelindex.gpus import architecture_for, normalise_product
from runs.manifests import A_PROVENANCE_URL, KINDS, VerifiedBundle

FORMAT = "kernelbench-timing"
SOURCE = "kernelbench"
FAMILY = "kernelbench_timing"
_LEVEL = re.compile(r"level\d+")
_PROBLEM = re.compile(r"(\d+)_[^/]+\.py")


def detect(loaded: Loaded) -> bool:
    data = loaded.data
    return (
        isinstance(data, dict)
        and bool(data)
        and all(_LEVEL.fullmatch(key) and isinstance(value, dict) for key, value in data.items())
    )


def parse(loaded: Loaded) -> Parsed:
    facts, bundles = parse_file(loaded)
    return Parsed(
        path=loaded.path,
        format=FORMAT,
        apply=None,
        summary=f"{len(bundles)} problem(s)",
        facts=facts,
        bundles=bundles,
        label=f"import: {loaded.path.name}",
        reason=f"imported from KernelBench timing {loaded.path.name}",
    )


def read_sidecar(path: Path) -> dict[str, Any]:
    sidecar_path = sidecar_for(path)
    if not sidecar_path.is_file():
        raise ImportFailure(
            path,
            f"no provenance sidecar {sidecar_path.name}: KernelBench timing files do not say which KernelBench "
            "commit produced them, and that is part of their comparability",
        )
    sidecar = Row(sidecar_path, "$", load(sidecar_path).data)
    commit = sidecar.string("commit")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise sidecar.fail(f"field 'commit' must be a full 40-hex git commit id, not {commit!r}")
    declared = sidecar.string("sha256")
    actual = canonical.sha256_hex(path.read_bytes())
    if declared != actual:
        raise sidecar.fail(f"describes a file with SHA-256 {declared}, but {path.name} has {actual}")
    url = sidecar.string("url", optional=True) or ""
    why = links.problem(url) if url else None
    if why is not None:
        raise sidecar.fail(f"field 'url' is not an http(s) URL: it {why} (got {url!r})")
    return {
        "commit": commit,
        "config": sidecar.string("timingConfig", optional=True) or path.parent.name,
        "url": url,
        "implementation": sidecar.string("implementation", optional=True) or "eager PyTorch baseline",
    }


def parse_file(loaded: Loaded) -> tuple[list[BenchmarkFacts], list[VerifiedBundle]]:
    path = loaded.path
    if not detect(loaded):
        raise ImportFailure(path, "not a KernelBench timing file ({'levelN': {problem: timing}})")
    provenance = read_sidecar(path)
    commit, config = provenance["commit"], provenance["config"]
    annotations = {A_PROVENANCE_URL: provenance["url"]} if provenance["url"] else {}
    cache = DigestCache()
    shared: dict[tuple[str, int, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    facts: list[BenchmarkFacts] = []
    bundles: list[VerifiedBundle] = []
    for level, problems in loaded.data.items():
        for problem, value in problems.items():
            row = Row(path, f"{level}[{problem!r}]", value)
            match = _PROBLEM.fullmatch(problem)
            if not match:
                raise row.fail("a problem name must look like '<number>_<name>.py'")
            stats = {key: row.number(key) for key in ("mean", "std", "min", "max")}
            if any(stat < 0 for stat in stats.values()):
                raise row.fail(f"timings must not be negative: {stats}")
            if not stats["min"] <= stats["mean"] <= stats["max"]:
                raise row.fail(f"mean {stats['mean']} is not between min {stats['min']} and max {stats['max']}")
            trials = row.integer("num_trials", minimum=1)
            hardware = row.string("hardware")
            device = row.string("device")
            native_id = f"{level}/{problem.removesuffix('.py')}"
            key = (hardware, trials, device)
            if key not in shared:
                shared[key] = _protocol(commit, config, trials, device), _environment(hardware)
            protocol, environment = shared[key]
            facts.append(
                BenchmarkFacts(
                    source=SOURCE,
                    native_id=native_id,
                    numeric_id=int(match.group(1)),
                    collection=level,
                    origin=str(path),
                )
            )
            product = environment["spec"]["hardware"]["product"]
            run = {
                "apiVersion": canonical.API_VERSION,
                "kind": KINDS["run"],
                "metadata": {
                    "name": f"kernelbench-{config.lower()}-{level}-{match.group(1)}",
                    "title": f"{provenance['implementation']} · {native_id} · {product.removeprefix('NVIDIA ')}",
                },
                "spec": {
                    "status": "passed",
                    "timing": {
                        "latencyNs": {name: ms_to_ns(stat) for name, stat in stats.items()},
                        "primaryStatistic": "mean",
                    },
                    "sourceNative": {
                        "source": SOURCE,
                        "benchmark": native_id,
                        "externalId": f"{config}/{path.stem}/{level}/{problem}",
                        "submitter": provenance["implementation"],
                        "metrics": {**stats, "num_trials": trials},
                    },
                },
            }
            docs = {"run": run, "protocol": protocol, "environment": environment}
            bundles.append(make_bundle(docs, cache=cache, annotations=annotations, origin=f"{path}, {row.where}"))
    if not bundles:
        raise ImportFailure(path, "no problems in the file")
    return facts, bundles


def _protocol(commit: str, config: str, trials: int, device: str) -> dict[str, Any]:
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["protocol"],
        "metadata": {
            "name": f"kernelbench-timing-{commit[:12]}-{config.lower()}-{trials}",
            "title": f"KernelBench timing {commit[:12]} ({config}, {trials} trials)",
        },
        "spec": {
            # The version names the commit and the timing configuration: both enter the
            # comparison key, so timings of other KernelBench versions or configs never mix.
            "harness": {"name": "KernelBench timing", "version": f"{commit[:12]} ({config}, {trials} trials)"},
            "source": {"repository": "ScalingIntelligence/KernelBench", "commit": commit},
            "measurement": {
                "timer": "cuda_event",
                "primaryStatistic": "mean",
                "unit": "ms",
                "numTrials": trials,
                "device": device,
                "config": config,
            },
            "correctness": {"reference": "the problem's PyTorch reference (this is the reference itself)"},
            "comparability": {
                "family": FAMILY,
                "notes": (
                    "KernelBench eager-PyTorch baseline timings. Comparable only within one problem, GPU, "
                    "KernelBench commit and timing configuration: problem sizes changed between versions."
                ),
            },
        },
    }


def _environment(hardware: str) -> dict[str, Any]:
    product = normalise_product(hardware)
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["environment"],
        "metadata": {"name": "kernelbench-" + product.lower().replace(" ", "-"), "title": product},
        "spec": {
            "hardware": {"vendor": "nvidia", "product": product, "architecture": architecture_for(product)},
        },
    }


register(Format(FORMAT, "KernelBench timing JSON ({levelN: {problem.py: {mean, std, min, max, …}}})", detect, parse))
