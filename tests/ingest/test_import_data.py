"""Importing every shipped file (data/), re-importing, verifying, round-tripping, ranking."""

from __future__ import annotations

import copy
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.core.management import call_command
from django.db import transaction
from django.db.models import F

from ingest.catalogue import merge_cases
from ingest.formats.base import load
from ingest.formats.sol_leaderboard import parse_bundles
from kernelindex import canonical
from runs import ranking
from runs.manifests import bundle_verify
from runs.models import Benchmark, ComparisonGroup, Run, RunRevision, Workload
from tests.ingest.conftest import (
    BOARD,
    DATA,
    DATA_PATHS,
    DEFINITION_10,
    KERNEL_API,
    KERNELBENCH,
    REFERENCE,
    TRACE,
    import_paths,
    snapshot,
)

GOLDEN = Path(__file__).parent / "golden" / "export.sha256"
REFERENCE_RUN_DIGEST = "sha256:6fa4f85da9b80839c97c94c18a0f459b639499a29d34959a080c5ac1bf870fb0"
REFERENCE_PROTOCOL = "sha256:6383f62490dad270ad2146a94f67b48fba5cfcbc0b9b180f02665c69cc4433a0"
REFERENCE_ENVIRONMENT = "sha256:f304afb2fedab4bbeadf8ac36a990ff517ab6e824dfe5a3ee0fe46259ff5e39f"


def export_text() -> str:
    out = io.StringIO()
    call_command("export", stdout=out)
    return out.getvalue()


def test_it_imports_every_shipped_file_and_a_second_import_changes_nothing(db: Any) -> None:
    import_paths(*DATA_PATHS)
    first = snapshot()
    # 23 board rows + the reference bundle + 1 trace + 250 KernelBench problems.
    assert first["counts"]["Run"] == 23 + 1 + 1 + 250
    assert first["counts"]["RunRevision"] == first["counts"]["Run"]
    import_paths(*DATA_PATHS)
    assert snapshot() == first


def test_all_of_data_including_other_areas_files_imports_and_reimports_unchanged(db: Any) -> None:
    # What scripts/serve does: `manage.py import data/`, whatever other areas ship there.
    import_paths(DATA)
    first = snapshot()
    assert first["counts"]["Run"] >= 275
    import_paths(DATA)
    assert snapshot() == first


def test_it_imports_each_file_on_its_own_too(db: Any) -> None:
    for path in (REFERENCE, BOARD, KERNEL_API, DEFINITION_10, TRACE, KERNELBENCH):
        import_paths(path)
    assert Run.objects.count() == 275


def test_the_reference_bundle_verifies_with_the_digests_of_the_reference_page(db: Any) -> None:
    bundle = bundle_verify(json.loads(REFERENCE.read_text()))
    assert bundle.digests["protocol"] == REFERENCE_PROTOCOL == bundle.declared["protocol"]
    assert bundle.digests["environment"] == REFERENCE_ENVIRONMENT == bundle.declared["environment"]
    assert bundle.digests["run"] == REFERENCE_RUN_DIGEST
    import_paths(REFERENCE)
    run = Run.objects.get()
    assert run.digest == REFERENCE_RUN_DIGEST
    assert run.protocol.digest == REFERENCE_PROTOCOL and run.environment.digest == REFERENCE_ENVIRONMENT
    # Declared but not carried: kept as declared.
    assert run.workload_digest.startswith("sha256:a37701116cf5df9e")
    assert run.implementation_digest.startswith("sha256:bb52682e1a9bd1ba")


def test_a_bundle_with_one_changed_byte_in_its_protocol_is_rejected_and_nothing_is_written(
    db: Any, tmp_path: Path
) -> None:
    text = REFERENCE.read_text()
    tampered = text.replace('"timer": "harness_reported"', '"timer": "harness_reporteD"')
    assert len(tampered) == len(text) and tampered != text
    path = tmp_path / "tampered.json"
    path.write_text(tampered)
    actual = canonical.digest_of(json.loads(tampered)["protocol"])
    with pytest.raises(Exception) as error:
        call_command("import", str(path))
    message = str(error.value)
    assert "tampered.json" in message and "protocol document" in message
    assert REFERENCE_PROTOCOL in message and actual in message
    assert snapshot()["counts"]["Run"] == 0 and Benchmark.objects.count() == 0


def test_export_then_import_into_an_empty_database_then_export_is_byte_identical(db: Any) -> None:
    with transaction.atomic():
        import_paths(*DATA_PATHS)
        first = export_text()
        transaction.set_rollback(True)
    assert Run.objects.count() == 0
    export = Path(__file__).parent / "export.tmp.jsonl"
    try:
        export.write_text(first, encoding="utf-8")
        import_paths(export)
    finally:
        export.unlink()
    second = export_text()
    digest = hashlib.sha256(first.encode()).hexdigest()
    assert hashlib.sha256(second.encode()).hexdigest() == digest  # byte-identical (compared by hash: 1 MB)
    assert len(first.splitlines()) == 275
    # The same bytes on every database backend: pinned.
    assert digest == GOLDEN.read_text().split()[0], f"export sha256 is {digest}"


def test_computed_ranks_equal_the_published_ranks_row_by_row(db: Any) -> None:
    import_paths(*DATA_PATHS)
    for board_path in sorted((DATA / "sol-execbench" / "leaderboards").glob("*.json")):
        rows = json.loads(board_path.read_text())
        rankings = (rows.get("response") or rows)["data"]["rankings"]
        kernel = (rows.get("response") or rows)["data"]["kernel_name"]
        runs = {
            run.external_id: run
            for run in Run.objects.filter(benchmark__native_id=kernel, group__family="sol_execbench_leaderboard")
        }
        assert len(runs) == len(rankings)
        for row in rankings:
            if row.get("is_reference"):
                run = runs[f"reference/{row['username']}"]
                assert run.is_reference and run.rank is None
            else:
                run = runs[str(row["submission_id"])]
                assert (run.rank, run.source_rank, run.submitter) == (row["rank"], row["rank"], row["username"])


def test_board_bundles_have_the_reference_shape_and_verify(db: Any) -> None:
    bundles = parse_bundles(load(BOARD))
    reference = json.loads(REFERENCE.read_text())
    for bundle in bundles:
        raw = copy.deepcopy(bundle.docs)
        verified = bundle_verify(raw)
        assert verified.digests == bundle.digests
        assert bundle.digests["protocol"] == REFERENCE_PROTOCOL
        assert bundle.digests["environment"] == REFERENCE_ENVIRONMENT
        spec = bundle.run_spec
        assert set(spec) - {"implementationDigest"} <= set(reference["run"]["spec"]) | {"workloadDigest"}
        assert spec["timing"]["primaryStatistic"] == "mean"
        assert set(spec["sourceNative"]["metrics"]) == set(reference["run"]["spec"]["sourceNative"]["metrics"])
    by_id = {b.run_spec["sourceNative"]["externalId"]: b for b in bundles}
    tilegym = by_id["33253"]
    assert tilegym.run_spec["sourceNative"]["submitter"] == "TH3CHARLie | TileGym"
    assert tilegym.run_spec["observedAt"] == "2026-08-04T05:08:02.104Z"
    assert tilegym.run_spec["timing"]["latencyNs"] == {"mean": 30001}
    assert tilegym.run["metadata"]["title"] == (
        "TH3CHARLie | TileGym · 010_attention_value_projection_with_transpose · B200"
    )
    assert tilegym.annotations["kernelindex.dev/source-rank"] == 15
    assert tilegym.annotations["kernelindex.dev/retrieved-at"] == "2026-09-06T18:40:17.028Z"
    assert by_id["reference/SOL Bound"].run_spec["sourceNative"]["isReference"] is True


def test_the_kernel_62_reference_bundle_lands_in_the_group_a_kernel_62_board_would(db: Any) -> None:
    board = json.loads(BOARD.read_text())
    data = board["response"]["data"]
    data["kernel_name"] = "062_kv_cache_update_with_rope_backward"
    rows = [r for r in data["rankings"] if r.get("is_reference") or r.get("submission_id") == 33253]
    data["rankings"] = rows
    path = Path(__file__).parent / "board-62.tmp.json"
    path.write_text(json.dumps(board))
    try:
        import_paths(path)  # the board first, the catalogue and the reference afterwards
        import_paths(DATA / "sol-execbench" / "definitions", REFERENCE)
    finally:
        path.unlink()
    reference = Run.objects.get(external_id="27772")
    board_run = Run.objects.get(external_id="33253")
    assert reference.group_id == board_run.group_id
    assert reference.group.key == canonical.key_digest(
        ranking.comparison_key_document(
            family="sol_execbench_leaderboard",
            source="sol-execbench",
            benchmark="062_kv_cache_update_with_rope_backward",
            product="B200",
            harness_name="SOL-ExecBench evaluation stack",
            harness_version="v1.1",
        )
    )
    assert ComparisonGroup.objects.filter(benchmark__native_id__startswith="062").count() == 1


def test_the_trace_is_a_run_of_its_own_family_never_in_the_leaderboard_group(imported_data: None) -> None:
    trace = Run.objects.get(group__family="sol_execbench_trace")
    board = Run.objects.filter(group__family="sol_execbench_leaderboard", benchmark=trace.benchmark)
    assert board.count() == 23 and trace.group_id not in set(board.values_list("group_id", flat=True))
    spec = trace.spec
    assert len(spec["cases"]) == 16 and all(case["status"] == "passed" for case in spec["cases"])
    assert spec["cases"][0]["latencyNs"] == {"median": 10160}
    hardware = trace.environment.spec["hardware"]
    assert (hardware["product"], hardware["architecture"], hardware["driver"], hardware["clocks"]) == (
        "NVIDIA B200",
        "sm_100",
        "580.105.08",
        "unlocked",
    )
    libraries = trace.environment.spec["software"]["libraries"]
    assert libraries["torch"] == "2.9.0+cu130" and libraries["cuda"] == "13.0" and libraries["triton"]
    assert trace.status == "passed" and trace.workload is not None


def test_kernelbench_runs_carry_their_version_and_timing_configuration(imported_data: None) -> None:
    runs = Run.objects.filter(source__slug="kernelbench")
    assert runs.count() == 250
    run = runs.get(benchmark__native_id="level1/1_Square_matrix_multiplication_")
    assert run.spec["timing"]["latencyNs"] == {"mean": 2660000, "std": 19900, "min": 2650000, "max": 2860000}
    assert run.environment.product == "NVIDIA H100 80GB HBM3" and run.environment.architecture == "sm_90"
    assert run.group.harness_version == "423217d9fda9 (H100_Modal, 100 trials)"
    assert run.rank == 1 and run.benchmark.collection == "level1" and run.benchmark.numeric_id == 1
    assert run.provenance_url.endswith(
        "423217d9fda91e0c2d67e4a43bf62f96f6d104f1/results/timing/H100_Modal/baseline_time_torch.json"
    )


def test_the_catalogue_gives_benchmarks_and_workloads(imported_data: None) -> None:
    kernel = Benchmark.objects.get(native_id="062_kv_cache_update_with_rope_backward")
    assert kernel.title == "KV cache update with RoPE backward"
    assert (kernel.collection, kernel.numeric_id, kernel.hf_model_id) == ("L1", 62, "mistralai/Devstral-Small-2507")
    assert (
        kernel.reference_code.startswith("import torch") and json.loads(kernel.definition)["name"] == kernel.native_id
    )
    case = kernel.workload.cases[0]
    assert case["id"] == "9aa4bf2f-47e1-5b25-bdb5-dafd8c770799"
    assert case["axes"]["num_kv_heads"] == 8 and case["axes"]["new_seq_len"] == 691
    assert case["solLatencyNs"] == 3600 and case["baselineLatencyNs"] == 194399.5
    assert case["tolerance"] == {"max_atol": 1e-05, "max_rtol": 0.05}
    ten = Benchmark.objects.get(native_id="010_attention_value_projection_with_transpose")
    assert "L1" in ten.tags and ten.workload.case_count == 16
    assert ten.workload.cases[0]["hardware"] == "NVIDIA B200"  # from the kernel API
    assert ten.workload.cases[0]["axes"]["kv_projection_size"] == 1024  # an expr axis, evaluated
    example = Benchmark.objects.get(native_id="rmsnorm_h4096")
    assert example.collection == "examples" and example.workload.case_count == 14


def _workload_after(*orders: list[Path]) -> list[str]:
    digests = []
    for order in orders:
        with transaction.atomic():
            for path in order:
                import_paths(path)
            digests.append(Benchmark.objects.get(native_id=DEFINITION_10.name).workload.digest)
            transaction.set_rollback(True)
    return digests


def test_catalogue_and_kernel_api_merge_to_the_same_workload_in_any_order(db: Any) -> None:
    one, other = _workload_after([DEFINITION_10, KERNEL_API], [KERNEL_API, DEFINITION_10])
    assert one == other
    with transaction.atomic():
        import_paths(KERNEL_API, DEFINITION_10)
        assert Benchmark.objects.get(native_id=DEFINITION_10.name).workload.digest == one
        assert Workload.objects.count() == 1  # merged before writing: no intermediate version
        transaction.set_rollback(True)


def test_a_changed_workload_becomes_a_new_version_not_a_duplicate(db: Any, tmp_path: Path) -> None:
    import_paths(KERNEL_API)
    first = Benchmark.objects.get(native_id=DEFINITION_10.name).workload
    changed = json.loads(KERNEL_API.read_text())
    changed["response"]["data"]["workloads"][0]["sol_ms"] = 0.0021
    path = tmp_path / "kernel-10.json"
    path.write_text(json.dumps(changed))
    import_paths(path)
    benchmark = Benchmark.objects.get(native_id=DEFINITION_10.name)
    assert Benchmark.objects.count() == 1 and Workload.objects.count() == 2
    assert benchmark.workload.digest != first.digest and benchmark.workload.cases[0]["solLatencyNs"] == 2100
    import_paths(path)
    assert Workload.objects.count() == 2


def test_a_changed_row_becomes_a_revision_not_a_duplicate(db: Any, tmp_path: Path) -> None:
    import_paths(BOARD)
    board = json.loads(BOARD.read_text())
    row = next(r for r in board["response"]["data"]["rankings"] if r.get("submission_id") == 33253)
    row["sol_score"] = 0.3991
    path = tmp_path / BOARD.name
    path.write_text(json.dumps(board))
    lines = import_paths(path)
    assert "0 created, 1 updated, 22 unchanged" in lines[-1]
    run = Run.objects.get(external_id="33253")
    assert Run.objects.count() == 23 and run.revision == 2 and run.sol_score == 0.3991
    revision = RunRevision.objects.get(run=run, number=2)
    assert revision.changes["sol_score"][1] == 0.3991 and revision.previous_digest
    assert RunRevision.objects.get(run=run, number=1).digest == revision.previous_digest
    # The objects lists read from their own columns follow the new document (and are no change
    # of their own: the document's is the one the revision records).
    assert json.loads(run.metrics_json)["sol_score"] == 0.3991 == run.spec["sourceNative"]["metrics"]["sol_score"]
    assert "metrics_json" not in revision.changes and "timing_json" not in revision.changes


def test_every_run_keeps_its_specs_timing_and_metrics_as_the_api_spells_them(imported_data: None) -> None:
    """runs.summaries.SUMMARIES, written with the document: the API's lists put this text into
    their items as it is, so it is the canonical document's objects in orjson's spelling."""
    runs = list(Run.objects.all())
    assert len(runs) > 250
    for run in runs:
        assert run.timing_json == orjson.dumps(run.spec["timing"], option=orjson.OPT_SORT_KEYS).decode(), run.public_id
        metrics = run.spec["sourceNative"].get("metrics")
        expected = orjson.dumps(metrics, option=orjson.OPT_SORT_KEYS).decode() if isinstance(metrics, dict) else None
        assert run.metrics_json == expected, run.public_id


def test_every_run_has_its_groups_source_and_benchmark(imported_data: None) -> None:
    """Run.source and Run.benchmark carry no database constraint of their own (runs/migrations/
    0015): the group's vouches for them because they are always the group's."""
    assert Run.objects.count() > 250
    assert not Run.objects.exclude(source=F("group__source")).exists()
    assert not Run.objects.exclude(benchmark=F("group__benchmark")).exists()
    # And they point at rows that exist (the join would drop a run whose source is gone).
    assert Run.objects.filter(source__slug__gt="", benchmark__native_id__gt="").count() == Run.objects.count()


def test_dry_run_writes_nothing(db: Any) -> None:
    out = io.StringIO()
    call_command("import", *map(str, DATA_PATHS), "--dry-run", stdout=out)
    assert "dry run" in out.getvalue()
    assert Run.objects.count() == 0 and Benchmark.objects.count() == 0


def test_format_can_be_forced(db: Any) -> None:
    out = io.StringIO()
    call_command("import", str(BOARD), "--format", "sol-leaderboard", stdout=out)
    assert "kernel-10-B200-v1.1.json: sol-leaderboard, 23 row(s)" in out.getvalue()
    assert "source runs of 1 file(s): 23 created" in out.getvalue()


def test_merge_cases_keeps_what_only_one_file_says() -> None:
    api = [{"index": 0, "id": None, "axes": {"a": 1, "b": 2}, "tolerance": None, "hardware": "NVIDIA B200"}]
    catalogue = [{"index": 0, "id": "u", "axes": {"a": 1}, "tolerance": {"max_atol": 1}}]
    assert merge_cases(api, catalogue) == merge_cases(catalogue, api)
    other_suite = [{"index": 0, "id": "v", "axes": {"a": 3}, "tolerance": None}]
    assert merge_cases(catalogue, other_suite) == other_suite
