"""GPU products (DESIGN §4): the one table that turns the names sources write ("B200",
"NVIDIA B200", "nvidia b200") into one product name, and a product into its architecture.

No Django and nothing outside the standard library: the rerun harness (``reruns/harness``) runs
on GPU hosts without the web app and uses this same table, so a rerun and an imported board of
one GPU land in one comparison group.
"""

from __future__ import annotations

import functools
import re

# GPU product names as sources write them → one normalised product name.
_PRODUCT_ALIASES = {
    "B200": "NVIDIA B200",
    "GB200": "NVIDIA GB200",
    "B300": "NVIDIA B300",
    "H100": "NVIDIA H100",
    "H100 80GB HBM3": "NVIDIA H100 80GB HBM3",
    "H100 SXM": "NVIDIA H100",
    "H200": "NVIDIA H200",
    "A100": "NVIDIA A100",
    "L40S": "NVIDIA L40S",
    "L4": "NVIDIA L4",
    "T4": "NVIDIA T4",
    # Older NVIDIA data-centre cards report themselves as "Tesla …" (KernelBench's T4 records).
    "Tesla T4": "NVIDIA T4",
}

# Normalised product family → architecture. Longest prefix wins.
_ARCHITECTURES = [
    ("NVIDIA GB200", "sm_100"),
    ("NVIDIA B200", "sm_100"),
    ("NVIDIA B300", "sm_103"),
    ("NVIDIA H100", "sm_90"),
    ("NVIDIA H200", "sm_90"),
    ("NVIDIA H20", "sm_90"),
    ("NVIDIA L40S", "sm_89"),
    ("NVIDIA L4", "sm_89"),
    ("NVIDIA A100", "sm_80"),
    ("NVIDIA A800", "sm_80"),
    ("NVIDIA A10", "sm_86"),
    ("NVIDIA A10G", "sm_86"),
    ("NVIDIA RTX A6000", "sm_86"),
    ("NVIDIA GeForce RTX 3090", "sm_86"),
    ("NVIDIA GeForce RTX 4090", "sm_89"),
    ("NVIDIA T4", "sm_75"),
    ("AMD Instinct MI250", "gfx90a"),
    ("AMD Instinct MI300", "gfx942"),
]

# Product name prefix → vendor, for sources that name the GPU but not its vendor.
_VENDORS = [("NVIDIA ", "nvidia"), ("AMD ", "amd")]


@functools.lru_cache(maxsize=1024)  # an import asks once per run, about a handful of names
def normalise_product(name: str) -> str:
    """'B200', 'nvidia b200' and 'NVIDIA B200' are one product: 'NVIDIA B200'."""
    cleaned = re.sub(r"\s+", " ", name or "").strip()
    if not cleaned:
        return ""
    if cleaned.lower().startswith("nvidia "):
        cleaned = "NVIDIA " + cleaned[len("nvidia ") :]
    bare = cleaned[len("NVIDIA ") :] if cleaned.startswith("NVIDIA ") else cleaned
    for alias, product in _PRODUCT_ALIASES.items():
        if bare.upper() == alias.upper():
            return product
    if cleaned.startswith("NVIDIA "):
        return cleaned
    if re.match(r"^(GB|[ABHLT])\d", bare.upper()):
        return "NVIDIA " + bare
    return cleaned


def architecture_for(product: str) -> str:
    """sm_XX for a normalised product, from the one lookup table; '' when unknown."""
    best = ""
    arch = ""
    for prefix, value in _ARCHITECTURES:
        if product.startswith(prefix) and len(prefix) > len(best):
            best, arch = prefix, value
    return arch


def vendor_for(product: str) -> str:
    """'nvidia' or 'amd' for a normalised product; '' when unknown."""
    for prefix, vendor in _VENDORS:
        if product.startswith(prefix):
            return vendor
    return ""
