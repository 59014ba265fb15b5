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

import orjson
import rfc8785

API_VERSION = "kernelindex.dev/v1alpha1"
MAX_SAFE_INTEGER = 2**53 - 1
DIGEST_PREFIX = "sha256:"
# Deepest nesting of arrays and objects a document may have (real ones have under 10 levels).
MAX_DEPTH = 64


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


def check(value: Any, path: str = "$", depth: int = 0) -> None:
    """Raise CanonicalError naming the path of the first value JCS cannot carry faithfully.

    Also refused: lone surrogates (not UTF-8, so no canonical bytes) and nesting deeper than
    MAX_DEPTH (no document needs it, and every recursive reader of it could overflow the stack).
    """
    if depth > MAX_DEPTH:
        raise CanonicalError(f"{path}: nested too deeply (more than {MAX_DEPTH} levels)")
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
        if not value.isascii() and not _is_utf8(value):
            raise CanonicalError(f"{path}: string contains a lone surrogate (not UTF-8)")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"{path}: object key {key!r} is not a string")
            if "\x00" in key:
                raise CanonicalError(f"{path}: object key contains \\u0000")
            if not key.isascii() and not _is_utf8(key):
                raise CanonicalError(f"{path}: object key {key!r} contains a lone surrogate (not UTF-8)")
            check(item, f"{path}.{key}", depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check(item, f"{path}[{index}]", depth + 1)
        return
    raise CanonicalError(f"{path}: {type(value).__name__} is not a JSON value")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loads(text: str | bytes) -> Any:
    """Parse JSON strictly: no NaN/Infinity, no duplicate keys, nothing JCS cannot carry.

    Raises json.JSONDecodeError for malformed text and CanonicalError for unfaithful values.
    """
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except RecursionError:
        raise CanonicalError(f"nested too deeply (more than {MAX_DEPTH} levels)") from None
    check(value)
    return value


def dumps(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON value (checked first)."""
    state = _scan(value)
    if state == _INVALID:
        check(value)  # raises CanonicalError naming the path of the offending value
    if state == _JSON_SAFE:
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError as error:  # a lone surrogate, or nesting beyond orjson's limit
            check(value)  # names the path when it is one of ours
            raise CanonicalError(f"not serialisable as canonical JSON: {error}") from None
    try:
        return "".join(_encode(value, [])).encode("utf-8")
    except UnicodeEncodeError:
        raise CanonicalError("a string contains a lone surrogate (not UTF-8)") from None


# Speed: an import of 100,000 runs serialises ~500,000 documents, and ``rfc8785.dumps`` (pure
# Python, character by character) would dominate it. ``dumps`` gives the same bytes faster
# (tests/kernelindex/test_canonical.py checks it against rfc8785 on real and random values):
# - when every float is one Python's repr writes the way ECMAScript does (not integral, and
#   1e-4 ≤ |x| < 1e16) and no key has a character beyond U+FFFF (so code-point order is UTF-16
#   order), orjson with sorted keys writes RFC 8785: the same bytes as the json module's C
#   encoder (sort_keys, no spaces, ensure_ascii off), in 27 ms instead of 60-69 ms for the 8,020
#   documents of 2,000 synthetic runs, with no intermediate str to encode;
# - otherwise ``_encode`` does, with the json module's C string escaper (it escapes exactly
#   the set RFC 8785 requires: ", \\, U+0000–U+001F as lowercase \\u00xx) and rfc8785's number
#   formatting for the floats that need it.
_INVALID, _VALID, _JSON_SAFE = 0, 1, 2
_escape = json.encoder.encode_basestring  # type: ignore[attr-defined]


def _scan(value: Any) -> int:
    kind = type(value)
    if kind is dict:
        state = _JSON_SAFE
        for key, item in value.items():
            if type(key) is not str or "\x00" in key:
                return _INVALID
            if not key.isascii() and max(key) > "\uffff":
                state = _VALID
            # Scalars inline: most of a document is scalars, and a call per value is what costs.
            kind = type(item)
            if kind is str:
                if "\x00" in item:
                    return _INVALID
                continue
            if kind is int:
                if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    return _INVALID
                continue
            if kind is bool or item is None:
                continue
            inner = _scan(item)
            if inner == _INVALID:
                return _INVALID
            if inner < state:
                state = inner
        return state
    if kind is str:
        return _INVALID if "\x00" in value else _JSON_SAFE
    if kind is int:
        return _JSON_SAFE if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else _INVALID
    if kind is float:
        if value != value or value in (math.inf, -math.inf):
            return _INVALID
        magnitude = abs(value)
        return _JSON_SAFE if 1e-4 <= magnitude < 1e16 and not value.is_integer() else _VALID
    if value is None or kind is bool:
        return _JSON_SAFE
    if kind is list or kind is tuple:
        state = _JSON_SAFE
        for item in value:
            inner = _scan(item)
            if inner == _INVALID:
                return _INVALID
            if inner < state:
                state = inner
        return state
    # Subclasses of str/int/float…: let the strict path decide.
    try:
        check(value)
    except CanonicalError:
        return _INVALID
    return _VALID


def _float(value: float) -> str:
    if value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        return str(int(value))
    return rfc8785.dumps(value).decode("ascii")


def _key(item: tuple[str, Any]) -> bytes:
    return item[0].encode("utf-16-be")


def _encode(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, str):
        out.append(_escape(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, dict):
        # RFC 8785 orders keys by their UTF-16 code units; for ASCII keys that is plain order.
        items = sorted(value.items()) if all(key.isascii() for key in value) else sorted(value.items(), key=_key)
        out.append("{")
        first = True
        for key, item in items:
            if not first:
                out.append(",")
            first = False
            out.append(_escape(key))
            out.append(":")
            _encode(item, out)
        out.append("}")
    else:  # list or tuple (check() allowed nothing else)
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    return out


def dumps_str(value: Any) -> str:
    return dumps(value).decode("utf-8")


def pretty(value: Any) -> str:
    """Human-readable JSON for pages and the run's JSON twin (two-space indent, keys in their
    order, text unescaped); never hashed. Written by orjson: the json module's indenting encoder
    is pure Python, a quarter of the CPU of a run page with 100 cases. A number parsed from a
    canonical document is written as that document writes it (1e-7, where json wrote 1e-07)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_of(doc: dict[str, Any]) -> str:
    """The DESIGN §2 digest of a document: over {apiVersion, kind, spec}, metadata excluded."""
    body = {key: value for key, value in doc.items() if key != "metadata"}
    return DIGEST_PREFIX + sha256_hex(dumps(body))


_DOCUMENT_KEYS = {"apiVersion", "kind", "metadata", "spec"}


def document_and_digest(doc: dict[str, Any]) -> tuple[str, str]:
    """The canonical text of a whole document and its digest (``digest_of``), serialising its
    spec once: JCS writes an object's members in key order (apiVersion, kind, metadata, spec),
    so the digest's bytes are the document's without the metadata member."""
    if set(doc) != _DOCUMENT_KEYS:
        return dumps_str(doc), digest_of(doc)
    api, kind = doc["apiVersion"], doc["kind"]
    if type(api) is str and type(kind) is str and "\x00" not in api + kind:
        head = '{"apiVersion":' + _escape(api) + ',"kind":' + _escape(kind)
    else:
        head = '{"apiVersion":' + dumps_str(api) + ',"kind":' + dumps_str(kind)
    spec = ',"spec":' + dumps_str(doc["spec"]) + "}"
    body = (head + spec).encode("utf-8")
    return head + ',"metadata":' + dumps_str(doc["metadata"]) + spec, DIGEST_PREFIX + sha256_hex(body)


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
