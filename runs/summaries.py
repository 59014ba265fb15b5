"""Two objects of a run's spec kept as JSON text in columns of their own (``Run.timing_json``,
``Run.metrics_json``), written with the document by the import (``ingest.session``) and filled
for older runs by migration 0014."""

from __future__ import annotations

from typing import Any

import orjson

# The objects of a run's spec that an API item carries (api.items.run_item), by the column that
# keeps each as JSON text, written with the document (ingest.session): a list reads two small
# texts a row. Having the database take them out of each whole document was a third of the CPU
# of the API's list of runs.
SUMMARIES = {"timing_json": ("timing",), "metrics_json": ("sourceNative", "metrics")}


def summaries_of(spec: Any) -> dict[str, str | None]:
    """The ``SUMMARIES`` columns of a run whose document has this spec: each object as JSON
    (orjson's spelling, keys sorted, as the API writes it), None where it is not an object."""
    columns: dict[str, str | None] = {}
    for name, path in SUMMARIES.items():
        value = spec
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        columns[name] = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode() if isinstance(value, dict) else None
    return columns
