"""KernelIndex rerun harness: re-measures SOL-ExecBench definitions on a GPU.

Self-contained (PyTorch, and Triton where a solution needs it; no Django):
    python -m reruns.harness --definition DIR --solution SPEC --out bundle.json
"""

from .canonical import digest
from .manifest import build_bundle, verify_bundle
from .version import HARNESS_NAME, HARNESS_VERSION

__version__ = HARNESS_VERSION
__all__ = ["HARNESS_NAME", "HARNESS_VERSION", "build_bundle", "digest", "verify_bundle"]
