"""The second batch of data/ (data/corpus-README.md): every data-quality finding it lists, and how
the importers treat it. The first batch and its golden export are tested in test_import_data.py."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from ingest.formats.sol_common import latency_identity_note
from runs.models import Benchmark, Run, Source
from tests.ingest.conftest import BOARD, DATA, import_paths, snapshot

TIMING = DATA / "kernelbench" / "timing"
OTHER = DATA / "kernelbench" / "timing-other-versions"
RUNS = DATA / "sol-execbench" / "runs" / "2026-09-06"
LIGER = DATA / "liger-kernel" / "benchmark" / "data"
FIB = DATA / "flashinfer-bench" / "bench" / "test" / "results"


def test_the_whole_corpus_imports_every_board_ranks_as_published_and_a_second_import_creates_nothing(db: Any) -> None:
    lines = import_paths(DATA)
    first = snapshot()
    assert first["counts"]["Run"] >= 20_000
    assert Run.objects.values("environment__product").distinct().count() >= 12
    assert Source.objects.filter(runs__isnull=False).distinct().count() >= 5
    assert any("README-source.md: not data, skipped" in line for line in lines)
    boards = Run.objects.filter(source__slug="sol-execbench", source_rank__isnull=False)
    assert boards.values("group").distinct().count() == 7  # kernels 3, 6, 10, 32, 43, 48, 55
    assert [(r.public_id, r.rank) for r in boards if r.rank != r.source_rank] == []
    # An import of thousands of runs ends with ANALYZE (ingest.pipeline.analyze), so the planner
    # knows the runs table's size (SQLite keeps no statistics until asked).
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT COUNT(*) FROM sqlite_stat1 WHERE tbl = 'runs_run'")
        else:
            cursor.execute("SELECT COUNT(*) FROM pg_stats WHERE tablename = 'runs_run'")
        assert cursor.fetchone()[0] > 0
    import_paths(DATA)
    assert snapshot() == first


def test_kernelbench_takes_the_gpu_from_each_record_never_from_the_folder(db: Any) -> None:
    import_paths(TIMING / "H100_modal" / "baseline_time_torch.json", TIMING / "A10G_modal", TIMING / "A100_modal")
    h100_modal = Run.objects.filter(external_id__startswith="H100_modal/")
    assert set(h100_modal.values_list("environment__product", flat=True)) == {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}
    a10g = set(Run.objects.filter(external_id__startswith="A10G_modal/").values_list("environment__product", flat=True))
    assert a10g == {"NVIDIA A10G", "NVIDIA A10"}
    a100 = Run.objects.filter(external_id__startswith="A100_modal/baseline_time_torch/")
    assert a100.filter(environment__product="NVIDIA A100-SXM4-40GB").count() == 245
    assert a100.filter(environment__product="NVIDIA A100-SXM4-80GB").count() == 5
    # One group never mixes two GPUs.
    assert all(len({r.environment.product for r in Run.objects.filter(group=g)}) == 1 for g in {r.group for r in a100})


def test_the_unit_unknown_file_is_skipped_with_its_reason_and_refused_without_its_sidecar(
    db: Any, tmp_path: Path
) -> None:
    lines = import_paths(TIMING / "A6000_babel_new")
    assert any("skipped, not imported: the unit of its numbers is unknown" in line for line in lines)
    assert Run.objects.count() == 0
    shutil.copy(TIMING / "A6000_babel_new" / "baseline_time_torch.json", tmp_path / "baseline_time_torch.json")
    with pytest.raises(CommandError, match="no provenance sidecar"):
        call_command("import", str(tmp_path / "baseline_time_torch.json"))
    assert Run.objects.count() == 0


def test_null_records_are_failed_measurements_counted_and_never_runs(db: Any) -> None:
    all_null = TIMING / "A6000_babel_level4" / "baseline_time_torch_compile_inductor_max-autotune.json"
    lines = import_paths(all_null, TIMING / "RTX_3090_Ti" / "baseline_time_torch_compile_cudagraphs.json")
    assert any("0 problem(s), 20 null record(s) skipped" in line for line in lines)
    assert any("7 problem(s), 243 null record(s) skipped" in line for line in lines)
    assert Run.objects.count() == 7
    assert not Run.objects.filter(latency_ns__isnull=True).exists()


def test_byte_identical_files_under_two_names_give_one_set_of_runs_in_either_order(db: Any) -> None:
    copy = TIMING / "A6000_babel_v0.0"
    import_paths(copy)
    assert Run.objects.count() == 281
    import_paths(TIMING / "A6000_babel" / "baseline_time_torch.json", copy)
    assert Run.objects.count() == 281
    assert Run.objects.filter(revision=1).count() == 281


def test_compile_modes_are_implementations_in_one_group_and_other_versions_are_other_groups(db: Any) -> None:
    commit = "87fc84ca3e33a245d234bae4639d1487de1317fc"
    import_paths(TIMING / "A6000_babel", OTHER / commit / "A6000_babel")
    problem = "level1/1_Square_matrix_multiplication_"
    runs = Run.objects.filter(benchmark__native_id=problem)
    eager_old = runs.get(
        external_id__contains="baseline_time_torch/", protocol__harness_version__startswith=commit[:12]
    )
    cudagraphs = runs.get(external_id__contains="cudagraphs")
    eager_new = runs.get(external_id__contains="baseline_time_torch/", protocol__harness_version__startswith="cb234a23")
    assert eager_old.group_id == cudagraphs.group_id  # same commit: one group, two implementations
    assert eager_old.submitter != cudagraphs.submitter
    assert eager_new.group_id != eager_old.group_id  # another version of the path: another group


def test_local_run_scores_above_one_are_kept_not_clamped(db: Any) -> None:
    import_paths(RUNS / "218")
    run = Run.objects.get()
    cases = json.loads(run.document)["spec"]["cases"]
    assert max(case["solScore"] for case in cases) > 1.3
    assert json.loads(run.document)["spec"]["sourceNative"]["metrics"]["cases_below_sol_bound"] == 4
    assert run.status == "passed"


def test_partial_local_runs_import_with_a_null_problem_score_in_groups_of_their_own(db: Any) -> None:
    import_paths(RUNS / "119", RUNS / "173")
    partial = Run.objects.filter(status="passed")
    assert partial.count() == 5  # 119 and four 173 smoke runs
    for run in partial:
        metrics = json.loads(run.document)["spec"]["sourceNative"]["metrics"]
        assert "sol_score" not in metrics and metrics["local_mean_sol_score"] > 0
        assert metrics["selected_workloads"] < metrics["total_workloads"] == 16
        assert "partial:" in run.protocol.harness_version and run.sol_score is None
    assert Run.objects.get(benchmark__native_id="025_moe_expert_parallel_execution_backward").latency_ns > 9e7


def test_the_failed_local_run_is_recorded_failed_with_no_latency(db: Any) -> None:
    import_paths(RUNS / "173" / "20260906T191206.566043Z-tf32-smoke-3b873a7ff86a")
    run = Run.objects.get()
    assert run.status == "failed" and run.latency_ns is None and run.rank is None
    assert {case["status"] for case in json.loads(run.document)["spec"]["cases"]} == {"failed"}


def test_the_bare_leaderboard_response_imports_without_a_provenance_url(db: Any) -> None:
    import_paths(RUNS / "6" / "diagnostics" / "leaderboard_snapshot.json")
    assert Run.objects.count() == 24
    assert set(Run.objects.values_list("provenance_url", flat=True)) == {""}
    assert all(r.rank == r.source_rank for r in Run.objects.filter(source_rank__isnull=False))


def test_two_snapshots_of_one_board_are_one_set_of_runs(db: Any) -> None:
    later = RUNS / "10" / "20260906T180107.148286Z-concrete-view-initial-923878a68f7a" / "leaderboard-snapshot.json"
    import_paths(BOARD, later)
    assert Run.objects.count() == 23
    import_paths(BOARD, later)
    assert Run.objects.filter(revision=1).count() == 23


def test_the_identity_tolerance_follows_the_published_precision() -> None:
    baseline = 0.380895
    # A speedup of 0.0076 is off by up to 0.66 % from rounding alone: a 0.6 % gap holds.
    assert latency_identity_note(round(baseline / 0.0076 / 1.006, 6), 0.0076, baseline) is None
    assert "5 % apart" in latency_identity_note(baseline / 1.0 * 1.05, 1.0, baseline)


def _edited_board(tmp_path: Path, index: int, **values: Any) -> Path:
    data = json.loads(BOARD.read_text())
    data["response"]["data"]["rankings"][index].update(values)
    path = tmp_path / "board.json"
    path.write_text(json.dumps(data))
    return path


def test_a_row_off_by_rounding_imports_without_a_note(db: Any, tmp_path: Path) -> None:
    rows = json.loads(BOARD.read_text())["response"]["data"]["rankings"]
    baseline = next(r["latency_ms"] for r in rows if r["username"] == "Scoring Baseline")
    path = _edited_board(tmp_path, 4, avg_speedup=0.0076, latency_ms=round(baseline / 0.0076 / 1.006, 6))
    out = io.StringIO()
    call_command("import", str(path), stdout=out)
    assert "warning" not in out.getvalue()
    assert not Run.objects.exclude(data_quality_note="").exists()


def test_a_row_that_breaks_the_identity_imports_with_a_note_and_a_warning(db: Any, tmp_path: Path) -> None:
    rows = json.loads(BOARD.read_text())["response"]["data"]["rankings"]
    path = _edited_board(tmp_path, 4, latency_ms=round(rows[4]["latency_ms"] * 1.05, 6))
    out = io.StringIO()
    call_command("import", str(path), stdout=out)
    warning = [line for line in out.getvalue().splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "rankings[4] (submission 19716)" in warning[0] and str(path) in warning[0]
    noted = Run.objects.exclude(data_quality_note="")
    assert [r.external_id for r in noted] == ["19716"]
    assert "Scoring Baseline latency is 0.025856" in noted[0].data_quality_note
    assert Run.objects.count() == 23 and all(r.rank == r.source_rank for r in Run.objects.filter(source_rank__gt=0))


def _liger_keys(path: Path) -> set[tuple[str, ...]]:
    with path.open(newline="") as handle:
        return {tuple(v for k, v in row.items() if not k.startswith("y_value")) for row in csv.DictReader(handle)}


def test_liger_speed_and_memory_are_different_benchmarks_and_memory_is_mib_unranked(db: Any) -> None:
    import_paths(LIGER / "h100_all_benchmark_data.csv")
    speed = Run.objects.filter(benchmark__native_id__contains="/speed/")
    memory = Run.objects.filter(benchmark__native_id__contains="/memory/")
    assert speed.exists() and memory.exists()
    assert not set(speed.values_list("group", flat=True)) & set(memory.values_list("group", flat=True))
    assert {json.loads(r.document)["spec"]["sourceNative"]["metrics"]["unit"] for r in memory} == {"MiB"}
    assert not memory.filter(rank__isnull=False).exists() and speed.filter(rank=1).exists()
    assert set(speed.values_list("environment__architecture", flat=True)) == {"sm_90"}


def test_liger_rows_repeated_in_grpo_vocab_chunk_are_one_run(db: Any) -> None:
    main, grpo = LIGER / "all_benchmark_data.csv", LIGER / "grpo_vocab_chunk.csv"
    import_paths(main, grpo)
    expected = len(_liger_keys(main) | _liger_keys(grpo))
    assert Run.objects.count() == expected < len(_liger_keys(main)) + len(_liger_keys(grpo))
    # The first file gives the shared rows their provenance; nothing is revised.
    assert Run.objects.filter(revision__gt=1).count() == 0
    assert Run.objects.filter(provenance_url__contains="grpo_vocab_chunk").count() == expected - len(_liger_keys(main))
    import_paths(grpo)  # on its own later: the same runs, never duplicates
    assert Run.objects.count() == expected


def test_flashinfer_failed_records_are_failed_runs_and_latency_comes_only_from_passed(db: Any) -> None:
    import_paths(FIB)
    assert Run.objects.count() == 68
    failed = Run.objects.filter(status="failed")
    assert failed.count() == 15 and not failed.filter(latency_ns__isnull=False).exists()
    assert set(failed.values_list("status_detail", flat=True)) == {"INCORRECT_NUMERICAL"}
    assert not Run.objects.filter(status="passed", latency_ns__isnull=True).exists()
    assert set(Run.objects.values_list("environment__product", "environment__architecture")) == {
        ("NVIDIA A800-SXM4-80GB", "sm_80")
    }


def test_definitions_join_runs_by_name_and_website_id_not_the_number_in_the_name(db: Any) -> None:
    import_paths(DATA / "sol-execbench" / "definitions", RUNS / "119", RUNS / "218")
    assert Benchmark.objects.get(native_id="025_moe_expert_parallel_execution_backward").numeric_id == 119
    assert Benchmark.objects.get(native_id="009_gemm_n5120_k2048").collection == "FlashInfer-Bench"
    run = Run.objects.get(benchmark__native_id="025_moe_expert_parallel_execution_backward")
    assert run.benchmark.numeric_id == 119 and run.benchmark.collection == "L2"


def test_the_data_quality_note_is_on_the_page_and_in_the_api(db: Any, client: Any, tmp_path: Path) -> None:
    rows = json.loads(BOARD.read_text())["response"]["data"]["rankings"]
    call_command("import", str(_edited_board(tmp_path, 4, latency_ms=round(rows[4]["latency_ms"] * 1.05, 6))))
    run = Run.objects.exclude(data_quality_note="").get()
    assert "data-quality note" in client.get(f"/runs/{run.public_id}/").content.decode()
    assert client.get(f"/api/v1/runs/{run.public_id}/").json()["dataQualityNote"] == run.data_quality_note
