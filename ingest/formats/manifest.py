"""Canonical manifest bundles, one JSON object or JSON Lines of bundles (what export writes)."""

from __future__ import annotations

from typing import Any

from ingest.formats.base import Format, ImportFailure, Loaded, Parsed, register
from runs.manifests import KINDS, ManifestError, VerifiedBundle, bundle_verify


def _looks_like_bundle(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("run"), dict) and value["run"].get("kind") == KINDS["run"]


def detect(loaded: Loaded) -> bool:
    if loaded.data is not None:
        return _looks_like_bundle(loaded.data)
    return bool(loaded.lines) and _looks_like_bundle(loaded.lines[0][1])


def parse(loaded: Loaded) -> Parsed:
    rows = [(None, loaded.data)] if loaded.data is not None else [(f"line {n}", v) for n, v in loaded.lines]
    bundles: list[VerifiedBundle] = []
    for row, value in rows:
        try:
            bundle = bundle_verify(value, origin="")
        except ManifestError as error:
            raise ImportFailure(loaded.path, str(error), row=row) from None
        # Errors found while writing (an unknown source…) name the file and row too.
        bundle.origin = f"{loaded.path}, row {row}" if row else str(loaded.path)
        bundles.append(bundle)

    return Parsed(
        path=loaded.path,
        format="manifest",
        apply=None,
        summary=f"{len(bundles)} bundle(s)",
        bundles=bundles,
        trusted=True,
        label=f"import: {loaded.path.name}",
        reason=f"imported from {loaded.path.name}",
    )


register(Format("manifest", "KernelIndex canonical manifest bundles (JSON or JSONL)", detect, parse))
