"""Source formats: one module per format, all registered in ``ingest.formats.base.FORMATS``."""

import importlib

# Format modules, in detection order (the most specific first).
FORMAT_MODULES = [
    "manifest",
    "sol_leaderboard",
    "sol_kernel",
    "sol_definition",
    "sol_trace",
    "kernelbench",
    "liger",
    "flashinfer",
]
# Formats that create benchmarks/workloads apply before formats that create runs.
APPLY_ORDER: dict[str, int] = {"sol-definition": 10, "sol-kernel": 10}


def load_all() -> None:
    for name in FORMAT_MODULES:
        importlib.import_module(f"ingest.formats.{name}")
