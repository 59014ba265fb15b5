"""The one check for URLs that enter the index from outside (no Django, no models).

Every URL a client, a source file or an annotation gives us (run artifacts, provenance URLs,
attestation links, source snapshots and sidecars) may later become an ``href`` on a page that
moderators open while signed in. Only absolute ``http``/``https`` URLs with a host are accepted:
not ``javascript:``, ``data:``, ``vbscript:`` or ``file:``, not protocol-relative (``//host``),
not relative, and nothing with whitespace or control characters anywhere (browsers strip tabs
and newlines *inside* a scheme, so ``java\\tscript:`` would run). Entity- or percent-encoded
schemes (``&#106;avascript:``, ``%6Aavascript:``) have no valid scheme and are refused too.

``is_http_url`` answers yes or no (templates use it again before rendering a stored URL as a
link); ``http_url`` returns the URL or raises ``UnsafeURL`` naming the field.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlsplit

SCHEMES = frozenset({"http", "https"})
# Every ASCII control character, whitespace anywhere, DEL, and the Unicode line/paragraph
# separators and BOM some browsers also skip. A real URL percent-encodes all of these. (A
# backslash may stay in a path or query; "https:\\host" still fails the "://" check below.)
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200f\u2028-\u202f\u205f\u3000\ufeff]")
_SCHEME = re.compile(r"^(https?)://", re.IGNORECASE)


class UnsafeURL(ValueError):
    """A URL that is not an absolute http(s) URL; the message names the field."""


def problem(value: Any, *, max_length: int = 1000) -> str | None:
    """Why ``value`` is not an acceptable http(s) URL, or None when it is."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > max_length:
        return f"must be at most {max_length} characters long, not {len(value)}"
    if _FORBIDDEN.search(value):
        return "must not contain whitespace or control characters"
    if not _SCHEME.match(value):
        return "must be an absolute http:// or https:// URL"
    try:
        parts = urlsplit(value)
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return "is not a valid URL"
    if parts.scheme.lower() not in SCHEMES or not hostname:
        return "must be an absolute http:// or https:// URL with a host"
    return None


def is_http_url(value: Any, *, max_length: int = 1000) -> bool:
    return problem(value, max_length=max_length) is None


def http_url(value: Any, *, field: str, max_length: int = 1000) -> str:
    """``value`` when it is an absolute http(s) URL; else UnsafeURL naming ``field``."""
    why = problem(value, max_length=max_length)
    if why is not None:
        shown = value if not isinstance(value, str) or len(value) <= 80 else value[:80] + "…"
        raise UnsafeURL(f"{field} is not an http(s) URL: it {why} (got {shown!r})")
    return value


# A benchmark's native id becomes a path (/benchmarks/<source>/<native id>/): segments of
# letters, digits, "_", "-", "+" and ".", never starting with "." (so never "." or "..", which
# a browser resolves: "../../../admin/auth/user" would link to /admin/auth/user/), joined by "/".
# Nothing to percent-encode, so "%2e%2e" cannot sneak a dot segment in either.
NATIVE_ID_PATTERN = r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9_.+-]*)*"
NATIVE_ID_MAX = 200
_NATIVE_ID = re.compile(NATIVE_ID_PATTERN)


def native_id_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a benchmark native id, or None when it can."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if len(value) > NATIVE_ID_MAX:
        return f"must be at most {NATIVE_ID_MAX} characters long, not {len(value)}"
    if not _NATIVE_ID.fullmatch(value):
        return (
            "may hold only letters, digits, '_', '-', '+' and '.' in '/'-separated parts that do not "
            f"start with '.' (got {value[:80]!r})"
        )
    return None


# Characters reverse() leaves unquoted in a path argument (RFC 3986 sub-delimiters and "/~:@").
_PATH_SAFE = "!$&'()*+,;=/~:@"


def page_path(*segments: str, prefix: str | None = None) -> str:
    """``/<segment>/<segment>/``, under the script prefix, as ``reverse()`` writes it.

    The pages' own objects (runs, groups, benchmarks, sources…) build their links with this: a
    list of 50 runs links each row three times, and ``reverse()`` (URL resolver, active
    language, script prefix) cost about 0.1 ms a call, a fifth of the page. tests/runs pins
    every object's path to ``reverse()`` of its URL name. ``prefix`` replaces the script prefix:
    a list that writes many links reads it once (and may put SITE_URL before it: a URL)."""
    if prefix is None:
        from django.urls import get_script_prefix

        prefix = get_script_prefix()
    path = "/".join(segments)
    # "/" is safe too, so the whole path matches only when every segment does: one regex for
    # the usual link (a list of 50 runs writes 150), a segment at a time only to quote one.
    if not _UNQUOTED.fullmatch(path):
        path = "/".join(_quoted(segment) for segment in segments)
    return prefix + path + "/"


# What quote(…, safe=_PATH_SAFE) returns unchanged: its always-safe characters and _PATH_SAFE.
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~!$&'()*+,;=/:@-]*")


def _quoted(segment: str) -> str:
    # Public ids, slugs, digests and keys need no quoting: one regex instead of quote()'s walk.
    return segment if _UNQUOTED.fullmatch(segment) else quote(segment, safe=_PATH_SAFE)
