"""KernelBench baseline timings (``results/timing/<config>/baseline_time_torch.json``).

``{"level1": {"1_Square_matrix_multiplication_.py": {mean, std, min, max, num_trials, hardware,
device}, …}, …}`` in milliseconds. One run per problem (benchmark native id
``level1/1_Square_matrix_multiplication_``), hardware from the file.

Problem sizes changed between KernelBench versions, so the KernelBench commit and the timing
configuration (the ``H100_Modal`` folder, ``num_trials``) are part of the comparison key, via the
harness version. The file does not carry its version: a provenance sidecar next to it
(``baseline_time_torch.provenance.json``, checked against the file's SHA-256) does.

Why the commit and not a digest of the problem set: the files name their problems but not their
sizes, and KernelBench changed sizes under unchanged names (level1 problem 1 on A10G is 5.78 ms
in one version and 0.858 ms in another), so a digest of what the file holds cannot tell two
problem sets apart; the commit that holds the file pins the problem code it was measured with.
Files of one folder committed together (an eager file and its ``torch.compile`` files) share a
group, their implementation (from the file name) differing; other versions of a path
(``timing-other-versions/<commit>/…``) are other groups.

Real-data rules (``data/corpus-README.md``):

- The GPU is each record's ``hardware``, never the folder name (``H100_modal`` holds H200 rows).
- A ``null`` record is a failed measurement (compile error, OOM, timeout). It is not a run: it
  names no GPU (and the GPU must come from the record) and holds no number. The import line
  counts those skipped.
- A sidecar that says ``"unit": "unknown"`` (``A6000_babel_new``: only ``mean``, no hardware,
  values 40–1000× the other A6000 files) makes the file skipped, with the reason printed: it is
  never imported as milliseconds. Without that sidecar it is refused (no ``std``/``hardware``).
- A sidecar with ``sameMeasurementAs`` names a byte-identical file under another name
  (``A6000_babel_v0.0`` = ``A6000_babel``): the file's runs are that file's runs (same
  provenance, same identity), so the two names never make duplicate runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ingest.catalogue import BenchmarkFacts
from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, load, register, sidecar_for
from ingest.records import DigestCache, Row, environment_document, make_bundle, ms_to_ns
from kernelindex import canonical, links
from runs.manifests import A_PROVENANCE_URL, KINDS, VerifiedBundle

FORMAT = "kernelbench-timing"
SOURCE = "kernelbench"
FAMILY = "kernelbench_timing"
_LEVEL = re.compile(r"level(\d+|_tk)")
_PROBLEM = re.compile(r"(\d+)_[^/]+\.py")


def detect(loaded: Loaded) -> bool:
    data = loaded.data
    return (
        isinstance(data, dict)
        and bool(data)
        and all(_LEVEL.fullmatch(key) and isinstance(value, dict) for key, value in data.items())
    )


def parse(loaded: Loaded) -> Parsed:
    provenance = read_sidecar(loaded.path)
    if provenance.get("unit") == "unknown":
        return Parsed(
            path=loaded.path,
            format=FORMAT,
            apply=None,
            summary=f"skipped, not imported: the unit of its numbers is unknown ({provenance['unitNote']})",
        )
    facts, bundles, nulls = parse_file(loaded, provenance)
    skipped = f", {nulls} null record(s) skipped (failed measurements: no GPU, no number)" if nulls else ""
    return Parsed(
        path=loaded.path,
        format=FORMAT,
        apply=None,
        summary=f"{len(bundles)} problem(s){skipped}",
        facts=facts,
        bundles=bundles,
        label=f"import: {loaded.path.name}",
        reason=f"imported from KernelBench timing {loaded.path.name}",
    )


def read_sidecar(path: Path, *, follow: bool = True) -> dict[str, Any]:
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
    unit = sidecar.string("unit", optional=True) or "ms"
    if unit not in {"ms", "unknown"}:
        raise sidecar.fail(f"field 'unit' must be 'ms' or 'unknown', not {unit!r}")
    if unit == "unknown":
        return {"unit": unit, "unitNote": sidecar.string("unitNote", optional=True) or "see its provenance sidecar"}
    same = sidecar.string("sameMeasurementAs", optional=True)
    if same is not None and follow:
        other = (path.parent / same).resolve()
        if not other.is_file() or other.read_bytes() != path.read_bytes():
            raise sidecar.fail(f"sameMeasurementAs names {same}, which is not a byte-identical copy of {path.name}")
        return read_sidecar(other, follow=False)
    return {
        "unit": unit,
        "commit": commit,
        "config": sidecar.string("timingConfig", optional=True) or path.parent.name,
        "url": url,
        "implementation": sidecar.string("implementation", optional=True) or "eager PyTorch baseline",
    }


def parse_file(
    loaded: Loaded, provenance: dict[str, Any] | None = None
) -> tuple[list[BenchmarkFacts], list[VerifiedBundle], int]:
    """(benchmarks, run bundles, number of null records skipped)."""
    path = loaded.path
    if not detect(loaded):
        raise ImportFailure(path, "not a KernelBench timing file ({'levelN': {problem: timing}})")
    if provenance is None:
        provenance = read_sidecar(path)
    if provenance.get("unit") == "unknown":
        raise ImportFailure(path, f"the unit of its numbers is unknown: {provenance['unitNote']}")
    commit, config = provenance["commit"], provenance["config"]
    annotations = {A_PROVENANCE_URL: provenance["url"]} if provenance["url"] else {}
    cache = DigestCache()
    shared: dict[tuple[str, int, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    facts: list[BenchmarkFacts] = []
    bundles: list[VerifiedBundle] = []
    nulls = records = 0
    for level, problems in loaded.data.items():
        for problem, value in problems.items():
            records += 1
            match = _PROBLEM.fullmatch(problem)
            if not match:
                where = f"{level}[{problem!r}]"
                raise ImportFailure(path, "a problem name must look like '<number>_<name>.py'", row=where)
            if value is None:
                nulls += 1
                continue
            row = Row(path, f"{level}[{problem!r}]", value)
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
    if not records:
        raise ImportFailure(path, "no problems in the file")
    return facts, bundles, nulls


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
    return environment_document(hardware, name_prefix="kernelbench")


register(Format(FORMAT, "KernelBench timing JSON ({levelN: {problem.py: {mean, std, min, max, …}}})", detect, parse))
