"""KernelIndex rerun harness: re-measures SOL-ExecBench definitions on a GPU.

Plain Python (PyTorch, and Triton where a solution needs it; no Django). It shares the index's
Django-free canonical JSON and GPU table (``kernelindex.canonical``, ``kernelindex.gpus``), so run it
from the repository root:
    python -m reruns.harness --definition DIR --solution SPEC --out bundle.json
"""

from kernelindex.canonical import digest_of as digest

from .manifest import build_bundle, verify_bundle
from .version import HARNESS_NAME, HARNESS_VERSION

__version__ = HARNESS_VERSION
__all__ = ["HARNESS_NAME", "HARNESS_VERSION", "build_bundle", "digest", "verify_bundle"]
