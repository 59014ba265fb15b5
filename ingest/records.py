"""Building blocks every source format uses: bundles of documents an importer built itself,
and rows of a source file read with errors that name the file and the row."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ingest.formats.base import ImportFailure
from kernelindex import canonical
from kernelindex.gpus import architecture_for, normalise_product, vendor_for
from runs.manifests import KINDS, VerifiedBundle, canonical_time

# KernelIndex's note on a row that breaks one of its source's identities (imported as published,
# with the note on its page, in the API and as an admin filter). An annotation: outside the digest.
A_DATA_QUALITY = "kernelindex.dev/data-quality"


class DigestCache:
    """Digests of the documents many bundles share (one protocol per board…), computed once."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[dict[str, Any], str]] = {}

    def digest(self, doc: dict[str, Any]) -> str:
        hit = self._by_id.get(id(doc))
        if hit is None or hit[0] is not doc:
            hit = (doc, canonical.digest_of(doc))
            self._by_id[id(doc)] = hit
        return hit[1]


def make_bundle(
    docs: dict[str, dict[str, Any]],
    *,
    cache: DigestCache,
    annotations: dict[str, Any] | None = None,
    origin: str = "",
) -> VerifiedBundle:
    """A VerifiedBundle of documents an importer built itself.

    The importer writes the run's declared digests from these very documents, so there is
    nothing to verify; computing the shared documents' digests once per file (not once per row)
    is what keeps a 100,000-row import fast. Tests check these bundles against
    ``bundle_verify``.
    """
    # The shared documents (protocol, environment) once per file; the rest once per row, text
    # and digest from one serialisation.
    shared = ("protocol", "environment")
    digests = {role: cache.digest(doc) for role, doc in docs.items() if role in shared}
    texts: dict[str, str] = {}
    for role, doc in docs.items():
        if role not in shared and role != "run":
            texts[role], digests[role] = canonical.document_and_digest(doc)
    run = docs["run"]
    spec = run["spec"]
    for role, key in (
        ("protocol", "protocolDigest"),
        ("environment", "environmentDigest"),
        ("workload", "workloadDigest"),
        ("implementation", "implementationDigest"),
    ):
        if role in digests:
            spec[key] = digests[role]
    texts["run"], digests["run"] = canonical.document_and_digest(run)
    declared = {role: digests[role] for role in digests if role != "run"}
    return VerifiedBundle(
        docs=docs, digests=digests, declared=declared, annotations=annotations or {}, origin=origin, texts=texts
    )


# -- row validation ---------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


class Row:
    """One object of a source file with a name for error messages ("rankings[5] (submission 19716)")."""

    def __init__(self, path: Path, where: str, value: Any) -> None:
        self.path = path
        self.where = where
        if not isinstance(value, dict):
            raise ImportFailure(path, f"must be an object, not {type_name(value)}", row=where)
        self.value = value

    def fail(self, problem: str) -> ImportFailure:
        return ImportFailure(self.path, problem, row=self.where)

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default)

    def _present(self, key: str) -> Any:
        if key not in self.value:
            raise self.fail(f"missing field {key!r}")
        return self.value[key]

    def string(self, key: str, *, optional: bool = False) -> str | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"field {key!r} must be a non-empty string, not {type_name(value)} {value!r}")
        return value

    def integer(self, key: str, *, minimum: int | None = None, optional: bool = False) -> int | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not is_int(value):
            raise self.fail(f"field {key!r} must be an integer, not {type_name(value)} {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(f"field {key!r} must be ≥ {minimum}, not {value}")
        return value

    def number(self, key: str, *, positive: bool = False, optional: bool = False) -> float | int | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not is_number(value):
            raise self.fail(f"field {key!r} must be a number, not {type_name(value)} {value!r}")
        if positive and value <= 0:
            raise self.fail(f"field {key!r} must be positive, not {value}")
        return value

    def obj(self, key: str, *, optional: bool = False) -> dict[str, Any] | None:
        if optional and self.value.get(key) is None:
            return None
        value = self._present(key)
        if not isinstance(value, dict):
            raise self.fail(f"field {key!r} must be an object, not {type_name(value)}")
        return value

    def array(self, key: str) -> list[Any]:
        value = self._present(key)
        if not isinstance(value, list):
            raise self.fail(f"field {key!r} must be an array, not {type_name(value)}")
        return value

    def timestamp(self, key: str, *, optional: bool = False) -> datetime | None:
        """ISO 8601; no timezone means UTC (SOL-ExecBench's submitted_at has none)."""
        value = self.string(key, optional=optional)
        if value is None:
            return None
        return parse_time(value, self, key)


def parse_time(value: str, row: Row, key: str) -> datetime:
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise row.fail(f"field {key!r} is not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def iso(value: datetime) -> str:
    """UTC with milliseconds and Z, as the reference's observedAt."""
    return canonical_time(value)


def ms_to_ns(value: float | int) -> float | int:
    """Milliseconds as published → nanoseconds, without float noise (0.01858 ms → 18580)."""
    ns = round(value * 1_000_000, 3)
    return int(ns) if ns == int(ns) else ns


def environment_document(gpu: str, *, name_prefix: str, libraries: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ExecutionEnvironment of a source that names only its GPU (and maybe its libraries):
    the product normalised and its vendor and architecture from ``kernelindex.gpus``."""
    product = normalise_product(gpu)
    spec: dict[str, Any] = {
        "hardware": {"vendor": vendor_for(product), "product": product, "architecture": architecture_for(product)}
    }
    if libraries is not None:
        spec["software"] = {"libraries": {str(k): str(v) for k, v in libraries.items()}}
    return {
        "apiVersion": canonical.API_VERSION,
        "kind": KINDS["environment"],
        "metadata": {"name": f"{name_prefix}-" + product.lower().replace(" ", "-"), "title": product},
        "spec": spec,
    }
