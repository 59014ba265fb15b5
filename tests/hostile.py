"""Hostile input shared by the API and import tests (issue 10): the URL variants a browser
would run as script, and bundles that used to crash the API (500) or ``manage.py import``
(traceback). Each builder returns a whole canonical bundle with its digests recomputed, so the
only thing wrong with it is the one thing the case is about.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelindex import canonical
from tests.factories import sol_bundle

# Every one of these must be refused wherever a URL enters, and never rendered as a link.
SCRIPT_URLS: list[str] = [
    "javascript:alert(document.domain)",
    "JaVaScRiPt:alert(document.domain)",
    " javascript:alert(1)",
    "\x01javascript:alert(1)",
    "&#106;avascript:alert(1)",
    "&#x6A;avascript:alert(1)",
    "%6Aavascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "//example.com/%0Ajavascript:alert(1)",
    "javascript://example.com/%0Aalert(1)",
    "java\tscript:alert(1)",
    "java\nscript:alert(1)",
    "java\rscript:alert(1)",
    "file:///etc/passwd",
    "//evil.example/logs",
    "/admin/auth/user/",
    "ftp://example.com/logs.txt",
    "https:\\\\evil.example",
    "http://",
    "\u2028javascript:alert(1)",
    "jav&#x09;ascript:alert(1)",
]
# A real link still goes through.
GOOD_URL = "https://github.com/ScalingIntelligence/KernelBench/actions/runs/1234"

INT32_MAX = 2**31 - 1


def redigest(bundle: dict[str, Any]) -> dict[str, Any]:
    """Recompute every digest the run declares for the documents the bundle carries."""
    spec = bundle["run"]["spec"]
    for role, key in (
        ("protocol", "protocolDigest"),
        ("environment", "environmentDigest"),
        ("workload", "workloadDigest"),
        ("implementation", "implementationDigest"),
    ):
        if role in bundle:
            spec[key] = canonical.digest_of(bundle[role])
    return bundle


def submitted_bundle(external_id: str = "hostile-1") -> dict[str, Any]:
    """A valid bundle under the "submitted" source (what a normal token may record)."""
    bundle = sol_bundle(submission_id=910001, username="TH3CHARLie | TileGym", sol_score=0.9, latency_ms=0.02)
    bundle["run"]["spec"]["sourceNative"]["source"] = "submitted"
    bundle["run"]["spec"]["sourceNative"]["externalId"] = external_id
    return redigest(bundle)


def with_artifact_url(url: str, external_id: str = "hostile-1") -> dict[str, Any]:
    bundle = submitted_bundle(external_id)
    bundle["run"]["spec"]["artifacts"] = [{"name": "logs", "url": url}]
    return redigest(bundle)


def _edit(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    bundle = submitted_bundle()
    change(bundle)
    return redigest(bundle)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(bundle: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = bundle
        for key in parents:
            node = node[key]
        node[last] = value

    return change


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


# (id, bundle builder, words the error must contain). Each one used to be a 500 or a traceback.
BROKEN_BUNDLES: list[tuple[str, Callable[[], dict[str, Any]], list[str]]] = [
    ("lone surrogate", lambda: _edit(_set("run.spec.sourceNative.submitter", "x\ud800y")), ["surrogate", "submitter"]),
    ("lone surrogate in a key", lambda: _edit(_set("run.spec.sourceNative.metrics", {"a\udfff": 1})), ["surrogate"]),
    ("30 February", lambda: _edit(_set("run.spec.observedAt", "2026-02-30T00:00:00Z")), ["observedAt", "2026-02-30"]),
    ("year 1 east of UTC", lambda: _edit(_set("run.spec.observedAt", "0001-01-01T00:00+05:00")), ["observedAt"]),
    ("year 9999 west of UTC", lambda: _edit(_set("run.spec.observedAt", "9999-12-31T23:59-05:00")), ["observedAt"]),
    ("fast_1_count 2^31", lambda: _edit(_set("run.spec.sourceNative.metrics.fast_1_count", 2**31)), ["fast_1_count"]),
    ("fast_1_total 2^40", lambda: _edit(_set("run.spec.sourceNative.metrics.fast_1_total", 2**40)), ["fast_1_total"]),
    (
        "fast_1_count −2^31−1",
        lambda: _edit(_set("run.spec.sourceNative.metrics.fast_1_count", -(2**31) - 1)),
        ["fast_1_count"],
    ),
    ("hardware as a list", lambda: _edit(_set("environment.spec.hardware", ["NVIDIA B200"])), ["hardware", "object"]),
    ("harness as a list", lambda: _edit(_set("protocol.spec.harness", ["sol-execbench"])), ["harness", "object"]),
    ("comparability as a list", lambda: _edit(_set("protocol.spec.comparability", ["x"])), ["comparability", "object"]),
    ("measurement as a string", lambda: _edit(_set("protocol.spec.measurement", "cuda events")), ["measurement"]),
    ("deep nesting", lambda: _edit(_set("run.spec.sourceNative.metrics.deep", _deep(500))), ["nested"]),
    ("1 MB externalId", lambda: submitted_bundle("x" * 1_000_000), ["externalId", "300"]),
    ("long benchmark", lambda: _edit(_set("run.spec.sourceNative.benchmark", "k" * 5000)), ["benchmark"]),
    ("long harness version", lambda: _edit(_set("protocol.spec.harness.version", "v" * 5000)), ["harness.version"]),
    ("long GPU product", lambda: _edit(_set("environment.spec.hardware.product", "B" * 5000)), ["hardware.product"]),
]


def ten_megabyte_external_id() -> dict[str, Any]:
    return submitted_bundle("x" * 10_000_000)


def deeply_nested_text(depth: int = 100_000) -> str:
    """A bundle whose metrics nest ``depth`` arrays deep: json's decoder recurses on it."""
    bundle = submitted_bundle()
    text = canonical.dumps_str(bundle)
    return text.replace('"metrics":{', '"metrics":{"deep":' + "[" * depth + "]" * depth + ",", 1)
