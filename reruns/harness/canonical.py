"""Canonical JSON (RFC 8785 / JCS) and document digests.

Digest of a manifest document = "sha256:" + hex(sha256(JCS(doc without "metadata"))),
i.e. over {apiVersion, kind, spec} (DESIGN.md section 2).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import rfc8785

MAX_SAFE_INTEGER = 2**53 - 1


class CanonicalJSONError(ValueError):
    """A value that RFC 8785 cannot carry faithfully (NaN/Infinity, huge int, NUL)."""


def check_jcs_safe(value: Any, path: str = "$") -> None:
    """Raise CanonicalJSONError for anything JCS cannot carry faithfully."""
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise CanonicalJSONError(f"{path}: integer {value} beyond +-(2^53-1)")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJSONError(f"{path}: non-finite number {value!r}")
        return
    if isinstance(value, str):
        if "\x00" in value:
            raise CanonicalJSONError(f"{path}: string contains U+0000")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalJSONError(f"{path}: non-string key {key!r}")
            if "\x00" in key:
                raise CanonicalJSONError(f"{path}: key contains U+0000")
            check_jcs_safe(item, f"{path}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_jcs_safe(item, f"{path}[{i}]")
        return
    raise CanonicalJSONError(f"{path}: unsupported type {type(value).__name__}")


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON value (after the safety check)."""
    check_jcs_safe(value)
    return rfc8785.dumps(value)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(doc: dict) -> str:
    """Digest of a manifest document: sha256 of JCS of the doc without "metadata"."""
    body = {key: val for key, val in doc.items() if key != "metadata"}
    return "sha256:" + sha256_hex(canonical_bytes(body))
