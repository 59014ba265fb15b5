"""Canonical JSON (RFC 8785, JCS) and the document digests of DESIGN §2.

A document's digest is ``"sha256:" + hex(sha256(JCS(doc without "metadata")))``. We keep the
canonical bytes of every imported document and hash those, so a digest never depends on how a
database column round-trips numbers or strings.

JCS can only carry a subset of what Python's ``json`` module accepts: no NaN/Infinity, no
integers beyond ±(2^53−1) (IEEE-754 doubles lose them), and we additionally refuse ``\\u0000``
because PostgreSQL text cannot store it. ``loads`` rejects all of these with the JSON path of the
offending value, so an importer can name the problem.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import rfc8785

API_VERSION = "kernelindex.dev/v1alpha1"
MAX_SAFE_INTEGER = 2**53 - 1
DIGEST_PREFIX = "sha256:"


class CanonicalError(ValueError):
    """A value that cannot be represented faithfully in canonical JSON."""


def _reject_constant(name: str) -> Any:
    raise CanonicalError(f"{name} is not allowed in canonical JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise CanonicalError(f"duplicate key {key!r} in an object")
        result[key] = value
    return result


def check(value: Any, path: str = "$") -> None:
    """Raise CanonicalError naming the path of the first value JCS cannot carry faithfully."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise CanonicalError(f"{path}: integer {value} is beyond ±(2^53−1)")
        return
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise CanonicalError(f"{path}: {value} is not allowed in canonical JSON")
        return
    if isinstance(value, str):
        if "\x00" in value:
            raise CanonicalError(f"{path}: string contains \\u0000")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"{path}: object key {key!r} is not a string")
            if "\x00" in key:
                raise CanonicalError(f"{path}: object key contains \\u0000")
            check(item, f"{path}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check(item, f"{path}[{index}]")
        return
    raise CanonicalError(f"{path}: {type(value).__name__} is not a JSON value")


def loads(text: str | bytes) -> Any:
    """Parse JSON strictly: no NaN/Infinity, no duplicate keys, nothing JCS cannot carry.

    Raises json.JSONDecodeError for malformed text and CanonicalError for unfaithful values.
    """
    value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    check(value)
    return value


def dumps(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON value (checked first)."""
    check(value)
    return rfc8785.dumps(value)


def dumps_str(value: Any) -> str:
    return dumps(value).decode("utf-8")


def pretty(value: Any) -> str:
    """Human-readable JSON for pages; never hashed."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_of(doc: dict[str, Any]) -> str:
    """The DESIGN §2 digest of a document: over {apiVersion, kind, spec}, metadata excluded."""
    body = {key: value for key, value in doc.items() if key != "metadata"}
    return DIGEST_PREFIX + sha256_hex(dumps(body))


def key_digest(value: Any) -> str:
    """sha256 of the canonical bytes of any value (comparison keys, public ids)."""
    return DIGEST_PREFIX + sha256_hex(dumps(value))


def short(digest: str, length: int = 16) -> str:
    """`sha256:afb19fba8875cb05…` — the shortened form pages show."""
    if not digest:
        return ""
    head, _, hexpart = digest.partition(":")
    if not hexpart:
        return digest[:length] + "…"
    return f"{head}:{hexpart[:length]}…"
