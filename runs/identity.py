"""Identity rules of the run index (DESIGN §1, §3): which sources exist, what identifies a run,
which benchmark a run belongs to, the evidence level a bundle is recorded with, and how a run's
public id is derived. Pure functions of a bundle: the import engine, the API and the pages use
them, and none of them writes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kernelindex import canonical
from kernelindex.gpus import normalise_product
from runs import rerun_bundles
from runs.manifests import A_EVIDENCE, ManifestError, VerifiedBundle
from runs.models import EvidenceLevel

KNOWN_SOURCES = {
    "sol-execbench": ("NVIDIA SOL-ExecBench", "https://research.nvidia.com/benchmarks/sol-execbench/"),
    "kernelbench": ("KernelBench", "https://github.com/ScalingIntelligence/KernelBench"),
    "gpu-mode": ("GPU MODE", "https://www.gpumode.com/"),
    "liger-kernel": ("Liger-Kernel", "https://github.com/linkedin/Liger-Kernel"),
    "flashinfer-bench": ("FlashInfer-Bench", "https://github.com/flashinfer-ai/flashinfer-bench"),
    "kernelindex": ("KernelIndex", ""),
    # Runs their authors sent through the API (submitter_reported), with no source behind them.
    "submitted": ("Submitted by their authors", ""),
}
# Sources whose runs only their importer (or KernelIndex's own rerun harness) may record: an API
# submission naming one would rank inside that source's boards.
SUBMITTABLE_SOURCES = {"submitted"}

# Words whose case a humanised title must keep.
_TITLE_WORDS = {
    "kv": "KV",
    "rope": "RoPE",
    "gqa": "GQA",
    "mqa": "MQA",
    "mla": "MLA",
    "rms": "RMS",
    "rmsnorm": "RMSNorm",
    "layernorm": "LayerNorm",
    "gemm": "GEMM",
    "gemv": "GEMV",
    "moe": "MoE",
    "fp8": "FP8",
    "fp4": "FP4",
    "bf16": "BF16",
    "fp16": "FP16",
    "fp32": "FP32",
    "int8": "INT8",
    "mlp": "MLP",
    "relu": "ReLU",
    "gelu": "GELU",
    "silu": "SiLU",
    "swiglu": "SwiGLU",
    "qk": "QK",
    "ssm": "SSM",
    "lstm": "LSTM",
    "gru": "GRU",
    "rnn": "RNN",
    "conv": "conv",
    "3d": "3D",
    "2d": "2D",
    "1d": "1D",
    "nvfp4": "NVFP4",
    "mxfp4": "MXFP4",
    "mxfp8": "MXFP8",
    "vgg": "VGG",
    "resnet": "ResNet",
}


def humanize_benchmark_name(native_id: str) -> str:
    """'062_kv_cache_update_with_rope_backward' → 'KV cache update with RoPE backward'."""
    name = native_id.rsplit("/", 1)[-1]
    name = re.sub(r"\.py$", "", name)
    name = re.sub(r"^\d+_", "", name)
    words = [word for word in re.split(r"[_\s]+", name) if word]
    if not words:
        return native_id
    out = [_TITLE_WORDS.get(word.lower(), word.lower() if not word.isupper() else word) for word in words]
    first = out[0]
    if first == first.lower():
        out[0] = first[:1].upper() + first[1:]
    return " ".join(out)


def identity_text(bundle: VerifiedBundle) -> str:
    """The canonical text of ``run_identity(bundle)`` (what ``Run.identity`` stores), worked out
    once per bundle: an import asks for it when it drops repeated runs and again when it writes."""
    text = bundle.__dict__.get("_identity_text")
    if text is None:
        text = canonical.dumps_str(run_identity(bundle))
        bundle.__dict__["_identity_text"] = text
    return text


def run_identity(bundle: VerifiedBundle) -> dict[str, Any]:
    """The source's own identity of a run (DESIGN §1): for SOL-ExecBench (source, kernel, GPU
    type, evaluation stack version, submission id). Generally: the comparison-key parts plus the
    source's external id, so one external id on two boards is two runs."""
    spec = bundle.run_spec
    native = spec["sourceNative"]
    harness = bundle.docs["protocol"]["spec"].get("harness", {})
    hardware = bundle.docs["environment"]["spec"].get("hardware", {})
    return {
        "source": native["source"],
        "benchmark": native["benchmark"],
        "hardware": normalise_product(str(hardware.get("product", ""))),
        "harness": {"name": str(harness.get("name", "")), "version": str(harness.get("version", ""))},
        "externalId": native["externalId"],
    }


def benchmark_target(bundle: VerifiedBundle) -> tuple[str, str]:
    """(source slug, native id) of the benchmark a run belongs to.

    The benchmark its workload document names when the bundle carries one, else the run's own
    source and ``sourceNative.benchmark``. So a KernelIndex rerun of a SOL-ExecBench definition
    (workload ``spec.benchmark`` = {source: "sol-execbench", nativeId: "062_…"}) belongs to
    SOL-ExecBench's benchmark, the same row as the source's boards and catalogue, while the
    run's source (and its comparison key's source) stays KernelIndex.
    """
    native = bundle.run_spec["sourceNative"]
    workload = bundle.docs.get("workload")
    target = workload["spec"].get("benchmark") if workload else None
    if not isinstance(target, dict) or not target.get("source"):
        return str(native["source"]), str(native["benchmark"])
    native_id = str(target.get("nativeId") or native["benchmark"])
    if native_id != str(native["benchmark"]):
        raise ManifestError(
            f"{bundle.origin}: the run names benchmark {native['benchmark']!r} but its workload is "
            f"benchmark {native_id!r} of {target['source']!r}"
        )
    return str(target["source"]), native_id


# Read once: Django builds ``EvidenceLevel.values`` anew at every access (4 s of a 100,000-run import).
EVIDENCE_LEVELS = frozenset(EvidenceLevel.values)


def evidence_level_for(bundle: VerifiedBundle, *, default: str, trust_annotations: bool) -> str:
    """The evidence level a bundle is recorded with (DESIGN §3). The one rule:

    - An operator's import (``trust_annotations``: ``manage.py import``, the trusted path)
      records a bundle of the KernelIndex rerun harness (``runs.rerun_bundles.is_rerun_bundle``) as
      ``kernelindex_rerun``, and any other bundle with the level its export annotation states
      (so an export re-imports as it was), else ``default``.
    - Every other caller gets ``default``: the API passes ``kernelindex_rerun`` only for a rerun
      token and ``submitter_reported`` otherwise; annotations are never read.
    - Whoever asks, ``kernelindex_rerun`` is refused for a bundle the rerun harness did not write.
    """
    origin = bundle.origin
    evidence = default
    if trust_annotations:
        if rerun_bundles.is_rerun_bundle(bundle.docs):
            evidence = EvidenceLevel.KERNELINDEX_RERUN
        elif A_EVIDENCE in bundle.annotations:
            evidence = bundle.annotations[A_EVIDENCE]
    if evidence not in EVIDENCE_LEVELS:
        raise ManifestError(f"{origin}: unknown evidence level {evidence!r}")
    if evidence == EvidenceLevel.KERNELINDEX_RERUN and not rerun_bundles.is_rerun_bundle(bundle.docs):
        raise ManifestError(
            f"{origin}: only a run measured by the KernelIndex rerun harness (source {rerun_bundles.RERUN_SOURCE!r}, "
            f"harness {rerun_bundles.RERUN_HARNESS!r}, comparability family {rerun_bundles.RERUN_FAMILY!r}) can have "
            "evidence level kernelindex_rerun"
        )
    return evidence


def public_id_candidates(identity_json: str) -> Iterable[str]:
    """8 hex characters of sha256(identity), extended by 2 on each collision."""
    full = canonical.sha256_hex(identity_json.encode("utf-8"))
    for length in range(8, 65, 2):
        yield full[:length]
