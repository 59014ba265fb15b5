"""Bad input: every kind gives an error naming the file, the row and the problem, and the whole
import (a valid file given with it included) writes nothing."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.ingest.conftest import BOARD, DEFINITION_10, KERNEL_API, KERNELBENCH, MODELS, REFERENCE, TRACE


def board() -> dict[str, Any]:
    return json.loads(BOARD.read_text())


def rankings(data: dict[str, Any]) -> list[dict[str, Any]]:
    return data["response"]["data"]["rankings"]


def edit_board(change: Callable[[dict[str, Any]], None]) -> str:
    data = board()
    change(data)
    return json.dumps(data)


def set_row(index: int, **values: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        rankings(data)[index].update(values)

    return change


def drop_field(index: int, key: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        del rankings(data)[index][key]

    return change


def edit_reference(change: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(REFERENCE.read_text())
    change(data)
    return json.dumps(data)


def no_baseline(data: dict[str, Any]) -> None:
    data["response"]["data"]["rankings"] = [r for r in rankings(data) if r["username"] != "Scoring Baseline"]


def duplicate_submission(data: dict[str, Any]) -> None:
    rankings(data).append(copy.deepcopy(rankings(data)[1]))


# (id, file name, content, what the message must say). Content is text, bytes, or a callable
# that builds a folder under tmp_path and returns its path.
CASES: list[tuple[str, str, Any, list[str]]] = [
    ("truncated JSON", "board.json", BOARD.read_text()[:700], ["invalid JSON"]),
    ("empty file", "board.json", "", ["the file is empty"]),
    ("whitespace only", "board.json", "  \n\n ", ["the file is empty"]),
    ("non-UTF-8", "board.json", b'{"data": "\xff\xfe"}', ["not UTF-8"]),
    ("unknown format", "mystery.json", '{"hello": "world"}', ["unknown format"]),
    ("NaN", "board.json", BOARD.read_text().replace('"sol_score": 0.534899', '"sol_score": NaN'), ["NaN"]),
    (
        "Infinity",
        "board.json",
        BOARD.read_text().replace('"latency_ms": 0.023825', '"latency_ms": Infinity'),
        ["Infinity"],
    ),
    ("\\u0000", "board.json", edit_board(set_row(1, username="RIAC\u0000")), ["\\u0000", "username"]),
    ("2^53 integer", "board.json", edit_board(set_row(1, submission_id=2**53 + 1)), ["9007199254740993", "2^53"]),
    (
        "duplicate key",
        "board.json",
        BOARD.read_text().replace('"rank": 1,', '"rank": 1, "rank": 2,', 1),
        ["duplicate key 'rank'"],
    ),
    (
        "wrong type",
        "board.json",
        edit_board(set_row(1, latency_ms="0.023825")),
        ["rankings[1] (submission 40940)", "'latency_ms' must be a number, not string"],
    ),
    (
        "missing field",
        "board.json",
        edit_board(drop_field(5, "sol_score")),
        ["rankings[5] (submission 20171)", "missing field 'sol_score'"],
    ),
    (
        "fast_1_count > total",
        "board.json",
        edit_board(set_row(2, fast_1_count=17)),
        ["rankings[2] (submission 39370)", "fast_1_count 17 is greater than fast_1_total 16"],
    ),
    (
        "bad timestamp",
        "board.json",
        edit_board(set_row(3, submitted_at="last Tuesday")),
        ["rankings[3] (submission 35332)", "not an ISO 8601 timestamp"],
    ),
    (
        "negative latency",
        "board.json",
        edit_board(set_row(6, latency_ms=-0.025)),
        ["rankings[6] (submission 41694)", "must be positive"],
    ),
    ("no Scoring Baseline", "board.json", edit_board(no_baseline), ["no Scoring Baseline row"]),
    ("duplicate submission", "board.json", edit_board(duplicate_submission), ["duplicate row", "rankings[23]"]),
    (
        "ranked reference row",
        "board.json",
        edit_board(set_row(0, rank=1)),
        ["reference row 'SOL Bound'", "must be unranked"],
    ),
    ("rankings not an array", "board.json", edit_board(lambda d: d["response"]["data"].update(rankings={})), ["array"]),
    (
        "snapshot without retrieval time",
        "board.json",
        edit_board(lambda d: d.pop("retrieved_at")),
        ["missing field 'retrieved_at'"],
    ),
    (
        "unknown source",
        "bundle.json",
        edit_reference(lambda d: d["run"]["spec"]["sourceNative"].update(source="nvidia-hub")),
        ["unknown source 'nvidia-hub'"],
    ),
    (
        "tampered digest",
        "bundle.json",
        edit_reference(lambda d: d["run"]["spec"].update(environmentDigest="sha256:" + "0" * 64)),
        ["digest mismatch for the environment document", "sha256:" + "0" * 64],
    ),
    (
        "wrong document kind",
        "bundle.json",
        edit_reference(lambda d: d["protocol"].update(kind="Protocol")),
        ["protocol document kind is 'Protocol'"],
    ),
    (
        "bad second JSONL line",
        "bundles.jsonl",
        json.dumps(json.loads(REFERENCE.read_text())) + "\n" + '{"run": {"kind": "BenchmarkRun"}}\n',
        ["row line 2"],
    ),
    (
        "kernel API without workloads",
        "kernel.json",
        (lambda d: (d["response"]["data"].update(workloads=[]), json.dumps(d))[1])(json.loads(KERNEL_API.read_text())),
        ["'workloads' is empty"],
    ),
]


def _folder_case(
    tmp_path: Path, source: Path, name: str, change: Callable[[Path], None]
) -> Path:  # copy a real folder, break one file
    folder = tmp_path / name
    shutil.copytree(source, folder)
    change(folder)
    return folder


def _edit_jsonl(path: Path, index: int, change: Callable[[dict[str, Any]], None]) -> None:
    lines = path.read_text().splitlines()
    value = json.loads(lines[index])
    change(value)
    lines[index] = json.dumps(value)
    path.write_text("\n".join(lines) + "\n")


FOLDER_CASES: list[tuple[str, Path, Callable[[Path], None], list[str]]] = [
    (
        "tampered trace",
        TRACE,
        lambda f: _edit_jsonl(
            f / "trial-1.jsonl", 0, lambda v: v["evaluation"]["performance"].update(latency_ms=0.001)
        ),
        ["summary.json", "trace_sha256 says trial-1.jsonl has SHA-256"],
    ),
    (
        "workload without uuid",
        DEFINITION_10,
        lambda f: _edit_jsonl(f / "workload.jsonl", 2, lambda v: v.pop("uuid")),
        ["workload.jsonl, row line 3", "missing field 'uuid'"],
    ),
    (
        "definition of another kernel's metadata",
        DEFINITION_10,
        lambda f: (f / "metadata.json").write_text(
            (f / "metadata.json").read_text().replace('"name": "010_', '"name": "011_', 1)
        ),
        ["metadata.json", "is not the definition's name"],
    ),
    (
        "KernelBench without its provenance sidecar",
        KERNELBENCH.parent,
        lambda f: (f / "baseline_time_torch.provenance.json").unlink(),
        ["no provenance sidecar baseline_time_torch.provenance.json"],
    ),
    (
        "KernelBench file that is not the one its sidecar describes",
        KERNELBENCH.parent,
        lambda f: (f / "baseline_time_torch.json").write_text(
            (f / "baseline_time_torch.json").read_text().replace('"mean": 2.66', '"mean": 2.67', 1)
        ),
        ["baseline_time_torch.provenance.json", "describes a file with SHA-256"],
    ),
]


def assert_nothing_written() -> None:
    counts = {model.__name__: model.objects.count() for model in MODELS}
    assert set(counts.values()) == {0}, counts


@pytest.mark.parametrize(("kind", "name", "content", "expected"), CASES, ids=[case[0] for case in CASES])
def test_broken_file_is_refused_naming_file_row_and_problem(
    db: Any, tmp_path: Path, kind: str, name: str, content: Any, expected: list[str]
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError) as error:
        # A valid file in the same import: it must not be written either.
        call_command("import", str(REFERENCE), str(path))
    message = str(error.value)
    assert str(path) in message, message
    for part in expected:
        assert part in message, message
    assert_nothing_written()


@pytest.mark.parametrize(("kind", "source", "change", "expected"), FOLDER_CASES, ids=[case[0] for case in FOLDER_CASES])
def test_broken_folder_is_refused_naming_file_row_and_problem(
    db: Any, tmp_path: Path, kind: str, source: Path, change: Callable[[Path], None], expected: list[str]
) -> None:
    folder = _folder_case(tmp_path, source, "case", change)
    with pytest.raises(CommandError) as error:
        call_command("import", str(REFERENCE), str(folder))
    message = str(error.value)
    assert str(folder) in message, message
    for part in expected:
        assert part in message, message
    assert_nothing_written()


def test_a_missing_path_is_refused(db: Any, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such file or folder"):
        call_command("import", str(tmp_path / "nope.json"))
    assert_nothing_written()


def test_there_are_at_least_twenty_kinds() -> None:
    assert len(CASES) + len(FOLDER_CASES) >= 20
