"""Issue 10: no cell of the CSV export starts like a spreadsheet formula, whichever column it is
in (it used to be only externalId, submitter and project); numbers stay numbers."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from kernelindex import spreadsheets
from tests.factories import import_bundles
from tests.hostile import redigest, submitted_bundle

pytestmark = pytest.mark.django_db

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_bundle() -> dict[str, Any]:
    bundle = submitted_bundle(external_id='=HYPERLINK("https://evil.example","x")')
    native = bundle["run"]["spec"]["sourceNative"]
    native["benchmark"] = "-kernel_2+3"
    native["submitter"] = "@SUM(A1:A9)"
    native["metrics"]["fast_1_count"] = -3  # a negative number: a number cell, not text
    bundle["run"]["spec"]["timing"]["primaryStatistic"] = "\tmean"
    bundle["run"]["spec"]["timing"]["latencyNs"] = {"\tmean": 18580}
    bundle["protocol"]["spec"]["harness"] = {"name": "=cmd|' /C calc'!A0", "version": "+1.1"}
    bundle["environment"]["spec"]["hardware"]["product"] = "@B200"
    bundle["environment"]["spec"]["hardware"]["architecture"] = "\rBlackwell"
    return redigest(bundle)


def test_every_text_cell_is_neutralised_and_numbers_stay_numbers(client: Any) -> None:
    import_bundles([formula_bundle()])
    body = b"".join(client.get("/api/v1/runs/export/csv/").streaming_content).decode()
    header, row = list(csv.reader(io.StringIO(body, newline="")))
    cells = dict(zip(header, row, strict=True))
    for column in ("externalId", "benchmark", "submitter", "gpu", "architecture", "harness", "harnessVersion"):
        assert cells[column].startswith("'"), (column, cells[column])
    assert cells["primaryStatistic"] == "'\tmean"
    assert cells["harness"] == "'=cmd|' /C calc'!A0"
    assert cells["fast1Count"] == "-3"
    offending = [(c, v) for c, v in cells.items() if v.startswith(FORMULA_START) and c != "fast1Count"]
    assert not offending, offending


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),  # text that looks like a number is still text a submitter wrote
        ("@A1", "'@A1"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("plain", "plain"),
        ("", ""),
        (-1, -1),
        (-2.5, -2.5),
        (None, None),
    ],
)
def test_the_one_cell_rule(value: Any, written: Any) -> None:
    assert spreadsheets.cell(value) == written
