"""Importers: one module per source format, all registered in ``runs.importers.base.FORMATS``."""

import importlib

# Format modules, in detection order (the most specific first).
FORMAT_MODULES = ["manifest"]
# Formats that create benchmarks/workloads apply before formats that create runs.
APPLY_ORDER: dict[str, int] = {}


def load_all() -> None:
    for name in FORMAT_MODULES:
        importlib.import_module(f"runs.importers.{name}")
