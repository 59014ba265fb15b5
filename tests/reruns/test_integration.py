"""KernelIndex's own reruns in the index: the H200 bundles the rerun harness wrote
(data/reruns/) imported the way ``scripts/serve`` imports data/, their evidence level, the
benchmark they belong to, their boards, their pages, and the links between a source's
reference rows and KernelIndex's reruns of the same code.

Numbers asserted here are the measured ones in data/reruns/README.md.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ingest.engine import import_bundles as bundles_import
from kernelindex import canonical
from runs import rerun_bundles
from runs.manifests import ManifestError, bundle_export, bundle_verify
from runs.models import Benchmark, ComparisonGroup, EvidenceLevel, Run, RunRevision, RunStatus
from tests.factories import FIRST_BATCH_AND_RERUNS, REPO, import_bundles, reference_bundle
from tests.web.pages import visible_text

DATA = REPO / "data"
RERUNS = DATA / "reruns"
K10 = "010_attention_value_projection_with_transpose"
K62 = "062_kv_cache_update_with_rope_backward"

pytestmark = pytest.mark.django_db


def import_data(*paths: Path) -> str:
    """``manage.py import`` as scripts/serve runs it (default: the first batch of data/ and the
    reruns; the corpus adds nothing these tests look at and is imported whole in tests/ingest)."""
    out = StringIO()
    default = (*FIRST_BATCH_AND_RERUNS, DATA / "sol-execbench" / "definitions")  # every rerun's definition
    call_command("import", *[str(p) for p in (paths or default)], stdout=out)
    return out.getvalue()


def reruns_by_revision(native_id: str, harness_version: str = "0.1.0") -> dict[str, Run]:
    """The reruns of one benchmark by one harness version (0.1.0: issue 6's CUDA-event reruns;
    0.2.0: issue 14's kernel-time reruns), by implementation revision."""
    runs = Run.objects.filter(
        source__slug="kernelindex", benchmark__native_id=native_id, protocol__harness_version=harness_version
    ).select_related("implementation", "benchmark__source", "group")
    return {run.implementation.revision: run for run in runs}


def snapshot() -> tuple[int, ...]:
    return (Run.objects.count(), Benchmark.objects.count(), ComparisonGroup.objects.count())


# -- evidence and benchmark ------------------------------------------------------------------


def test_serve_import_records_every_rerun_as_kernelindex_rerun_on_the_sources_benchmark() -> None:
    import_data()
    runs = list(Run.objects.filter(source__slug="kernelindex").select_related("benchmark__source", "group"))
    # issue 6's 6 bundles (harness 0.1.0) and issue 14's 26 (harness 0.2.0): 18 of 2026-12-01
    # and 8 of a second device session, 2026-12-02 (the 062 reference again, 7 new definitions)
    assert len(runs) == len(list(RERUNS.glob("*.json"))) == 32
    assert {run.evidence_level for run in runs} == {EvidenceLevel.KERNELINDEX_RERUN}
    # No benchmark of KernelIndex's own: each rerun belongs to SOL-ExecBench's benchmark, the
    # row its leaderboard, catalogue and reference bundle use; its source stays KernelIndex.
    assert not Benchmark.objects.filter(source__slug="kernelindex").exists()
    for run in runs:
        assert run.benchmark.source.slug == "sol-execbench"
    assert {run.benchmark.native_id for run in runs} >= {K10, K62}
    sol_10 = Benchmark.objects.get(source__slug="sol-execbench", native_id=K10)
    assert sol_10.title == "Attention value projection with transpose"
    board_run = Run.objects.get(source__slug="sol-execbench", submitter="Reference Implementation")
    assert board_run.benchmark_id == sol_10.pk
    assert {run.benchmark_id for run in runs if run.benchmark.native_id == K10} == {sol_10.pk}
    # Source runs stay source_reported.
    assert not Run.objects.exclude(source__slug="kernelindex").filter(evidence_level="kernelindex_rerun").exists()


def test_each_kernel_has_one_kernelindex_h200_group_ranked_by_latency() -> None:
    import_data()
    for native_id, count in ((K10, 3), (K62, 3)):
        groups = ComparisonGroup.objects.filter(
            family="kernelindex_rerun",
            benchmark__native_id=native_id,
            harness_version="0.1.0",
        )
        assert groups.count() == 1
        group = groups.get()
        assert group.source.slug == "kernelindex"
        assert group.benchmark.source.slug == "sol-execbench"
        assert (group.hardware_product, group.harness_label) == ("NVIDIA H200", "KernelIndex rerun harness 0.1.0")
        assert (group.ranking_metric, group.ranking_direction) == ("latency_ns", "asc")
        assert group.runs.count() == count
        key = json.loads(group.key_document)
        assert key["family"] == "kernelindex_rerun" and key["source"] == "kernelindex"
        assert key["benchmark"] == native_id and key["hardware"] == "NVIDIA H200"
        ranked = list(group.runs.filter(rank__isnull=False).order_by("rank"))
        assert [run.latency_ns for run in ranked] == sorted(run.latency_ns for run in ranked)

    k10 = reruns_by_revision(K10)
    # 39.864 µs (torch.compile) < 40.704 µs (scoring baseline) < 40.748 µs (reference)
    assert {rev: run.rank for rev, run in k10.items()} == {"torch-compile": 1, "scoring-baseline": 2, "reference": 3}
    assert round(k10["torch-compile"].latency_ns) == 39864
    assert round(k10["scoring-baseline"].latency_ns) == 40704
    assert round(k10["reference"].latency_ns) == 40748

    k62 = reruns_by_revision(K62)
    assert k62["torch-compile-eager-numerics"].rank == 1
    assert round(k62["torch-compile-eager-numerics"].latency_ns) == 69570
    assert k62["reference"].rank == 2
    assert round(k62["reference"].latency_ns) == 349086
    failed = k62["torch-compile"]
    assert (failed.status, failed.status_detail) == (RunStatus.FAILED, "INCORRECT_NUMERICAL")
    assert failed.rank is None and failed.latency_ns is None

    # Harness 0.2.0 (kernel time primary) is a group of its own: another timer, not comparable.
    k10 = reruns_by_revision(K10, "0.2.0")
    assert {rev: run.rank for rev, run in k10.items()} == {"reference": 1}
    assert round(k10["reference"].latency_ns) == 36337
    assert k10["reference"].group.harness_label == "KernelIndex rerun harness 0.2.0"
    # 062 at 0.2.0: the reference measured in two device sessions (2026-12-01, 2026-12-02) is one
    # implementation, so only its better run holds a rank; the other stays on the board unranked.
    k62 = Run.objects.filter(source__slug="kernelindex", benchmark__native_id=K62, protocol__harness_version="0.2.0")
    assert sorted((run.implementation.revision, round(run.latency_ns), run.rank) for run in k62) == [
        ("reference", 178368, 2),
        ("reference", 179519, None),
        ("torch-compile-eager-numerics", 63004, 1),
    ]


def test_reimport_is_unchanged_and_an_exported_rerun_reimports_as_a_rerun(tmp_path: Path) -> None:
    import_data(RERUNS)
    assert f"0 created, 0 updated, {len(list(RERUNS.glob('*.json')))} unchanged" in import_data(RERUNS)
    before = {run.public_id: (run.digest, run.evidence_level, run.rank) for run in Run.objects.all()}
    exported = tmp_path / "reruns.jsonl"
    exported.write_text("".join(canonical.dumps_str(bundle_export(run, full=True)) + "\n" for run in Run.objects.all()))
    RunRevision.objects.all().delete()
    Run.objects.all().delete()
    import_data(exported)
    after = {run.public_id: (run.digest, run.evidence_level, run.rank) for run in Run.objects.all()}
    assert after == before
    assert {level for _, level, _ in after.values()} == {"kernelindex_rerun"}


# -- who may create kernelindex_rerun evidence -----------------------------------------------


@pytest.mark.parametrize(
    ("role", "path", "value"),
    [
        ("implementation", ("spec", "revision"), "tampered"),
        ("protocol", ("spec", "harness", "version"), "0.2.0"),
        ("environment", ("spec", "hardware", "product"), "NVIDIA B200"),
        ("workload", ("spec", "suite", "caseCount"), 15),
    ],
)
def test_a_tampered_rerun_bundle_is_rejected_by_manage_py_import(
    tmp_path: Path, role: str, path: tuple[str, ...], value: Any
) -> None:
    bundle = json.loads((RERUNS / "L1-010-reference-H200.json").read_text())
    target = bundle[role]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(bundle))
    with pytest.raises(CommandError) as error:
        import_data(tampered)
    message = str(error.value)
    assert "tampered.json" in message and f"digest mismatch for the {role} document" in message
    assert snapshot() == (0, 0, 0)


def test_kernelindex_rerun_is_refused_for_a_bundle_the_rerun_harness_did_not_write() -> None:
    # Asked for by a caller (the API passes it for a rerun token) …
    with pytest.raises(ManifestError, match="only a run measured by the KernelIndex rerun harness"):
        import_bundles([reference_bundle()], evidence_level=EvidenceLevel.KERNELINDEX_RERUN)
    # … or claimed by an export annotation on an operator's import.
    bundle = reference_bundle()
    bundle["run"]["metadata"]["annotations"] = {"kernelindex.dev/evidence-level": "kernelindex_rerun"}
    with pytest.raises(ManifestError, match="only a run measured by the KernelIndex rerun harness"):
        import_bundles([bundle], trust_annotations=True)
    # A rerun-family protocol under another harness name is not the rerun harness either.
    rerun = json.loads((RERUNS / "L1-010-reference-H200.json").read_text())
    rerun["protocol"]["spec"]["harness"]["name"] = "Someone's harness"
    rerun["run"]["spec"]["protocolDigest"] = canonical.digest_of(rerun["protocol"])
    assert not rerun_bundles.is_rerun_bundle(bundle_verify(rerun).docs)
    with pytest.raises(ManifestError, match="only a run measured by the KernelIndex rerun harness"):
        import_bundles([rerun], evidence_level=EvidenceLevel.KERNELINDEX_RERUN)
    assert snapshot()[0] == 0


def test_only_the_operators_trusted_import_makes_a_rerun_bundle_kernelindex_rerun() -> None:
    bundle = json.loads((RERUNS / "L1-010-reference-H200.json").read_text())
    # An untrusted import (what a source importer or any other caller gets by default).
    bundles_import([bundle_verify(bundle)], evidence_level=EvidenceLevel.SUBMITTER_REPORTED)
    assert Run.objects.get().evidence_level == EvidenceLevel.SUBMITTER_REPORTED
    # manage.py import: the trusted path.
    bundles_import([bundle_verify(bundle)], trust_annotations=True)
    assert Run.objects.get().evidence_level == EvidenceLevel.KERNELINDEX_RERUN


def test_a_workload_of_another_benchmark_than_the_run_names_is_refused() -> None:
    bundle = json.loads((RERUNS / "L1-010-reference-H200.json").read_text())
    bundle["workload"]["spec"]["benchmark"]["nativeId"] = K62
    bundle["run"]["spec"]["workloadDigest"] = canonical.digest_of(bundle["workload"])
    with pytest.raises(ManifestError, match="its workload is benchmark"):
        import_bundles([bundle], trust_annotations=True)
    assert snapshot() == (0, 0, 0)


# -- pages -------------------------------------------------------------------------------------


def page(client: Any, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return visible_text(response.content.decode())


def test_the_sol_benchmark_page_shows_kernelindex_h200_boards_beside_the_sources(client: Any) -> None:
    import_data()
    text = page(client, f"/benchmarks/sol-execbench/{K10}/")
    source_board = text.index("NVIDIA B200 · SOL-ExecBench evaluation stack v1.1")
    own_board = text.index("NVIDIA H200 · KernelIndex rerun harness 0.1.0 (3 runs) KernelIndex H200 board")
    assert source_board < own_board
    k10 = reruns_by_revision(K10)
    rows = text[own_board:]
    # rank, run, latency (a latency-ranked board has no SOL column), submitter, observed
    assert (
        f"1 of 3 {k10['torch-compile'].public_id} 39.9 µs KernelIndex · torch-compile 2026-11-30 "
        f"2 of 3 {k10['scoring-baseline'].public_id} 40.7 µs KernelIndex · scoring-baseline 2026-11-30 "
        f"3 of 3 {k10['reference'].public_id} 40.7 µs KernelIndex · reference 2026-11-30"
    ) in rows

    text = page(client, f"/benchmarks/sol-execbench/{K62}/")
    own_board = text.index("NVIDIA H200 · KernelIndex rerun harness 0.1.0 (3 runs) KernelIndex H200 board")
    k62 = reruns_by_revision(K62)
    rows = text[own_board:]
    best = k62["torch-compile-eager-numerics"].public_id
    assert f"1 of 2 {best} 69.6 µs KernelIndex · torch-compile-eager-numerics 2026-11-30" in rows
    assert f"2 of 2 {k62['reference'].public_id} 349 µs KernelIndex · reference 2026-11-30" in rows
    assert k62["torch-compile"].public_id not in text  # failed: not on the board
    # The ranking page of the group lists the failed run only with ?show=all.
    group = k62["torch-compile"].group
    assert k62["torch-compile"].public_id not in page(client, group.get_absolute_url())
    assert k62["torch-compile"].public_id in page(client, group.get_absolute_url() + "?show=all")
    assert client.get(f"/benchmarks/kernelindex/{K62}/").status_code == 404


def plain_run_page_queries(client: Any) -> int:
    """Queries of a run page with no rerun link (SOL-ExecBench's SOL Bound row): every run
    page's own budget (tests/web/test_queries.py pins it)."""
    sol_bound = Run.objects.get(source__slug="sol-execbench", benchmark__native_id=K10, submitter="SOL Bound")
    with CaptureQueriesContext(connection) as queries:
        text = page(client, sol_bound.get_absolute_url())
    assert "Re-measured by KernelIndex" not in text and "What this rerun re-measured" not in text
    return len(queries.captured_queries)


def test_a_rerun_page_says_how_kernelindex_measured_it(client: Any, django_assert_num_queries: Any) -> None:
    import_data()
    run = reruns_by_revision(K62)["reference"]
    # Every run page's queries + 1 for the source rows it re-measured.
    with django_assert_num_queries(plain_run_page_queries(client) + 1):
        text = page(client, run.get_absolute_url())
    for expected in (
        "evidence: KernelIndex rerun",
        "Re-measured by KernelIndex on NVIDIA H200 under its own harness (KernelIndex rerun harness 0.1.0).",
        "Rank 2 of 2 in its comparison group · KernelIndex-controlled comparison",
        "349 µs median",
        "trials 3 separate processes: 336 µs / 373 µs / 363 µs (geomean of per-case medians in each)",
        "spread 10.88 % (max/min − 1 of the per-trial latencies)",
        "timer per case cuda_events on 16 of 16 cases",
        "Marked passed by KernelIndex's rerun harness under its published policy; 16/16 cases passed:",
        "defaults max_atol 0.01, max_error_cap none, max_rtol 0.01, required_matched_ratio 1",
        "source KernelIndex",
        "NVIDIA SOL-ExecBench › KV cache update with RoPE backward › NVIDIA H200 · KernelIndex rerun harness 0.1.0",
    ):
        assert expected in text, expected
    assert "{'" not in text and "{&#x27;" not in text  # no Python dict printed
    assert "Marked passed by the source" not in text

    k10 = reruns_by_revision(K10)["torch-compile"]
    text = page(client, k10.get_absolute_url())
    assert "timer per case cuda_graph on 16 of 16 cases" in text
    assert "spread 0.59 %" in text


def test_a_failed_rerun_page_shows_its_status_and_per_case_statuses(client: Any) -> None:
    import_data()
    run = reruns_by_revision(K62)["torch-compile"]
    text = page(client, run.get_absolute_url())
    for expected in (
        "evidence: KernelIndex rerun status: failed",
        "Re-measured by KernelIndex on NVIDIA H200 under its own harness (KernelIndex rerun harness 0.1.0): "
        "failed (INCORRECT_NUMERICAL), so not ranked.",
        "Not ranked in its comparison group",
        "Marked failed (INCORRECT_NUMERICAL) by KernelIndex's rerun harness under its published policy; "
        "0/16 cases passed:",
        "INCORRECT_NUMERICAL grad_key_states: matched ratio 0.992624 < required 1.0",
        "trials 3 separate processes spread — (no case was timed) timer per case — (no case was timed)",
    ):
        assert expected in text, expected
    assert text.count("INCORRECT_NUMERICAL grad_key_states") == 16


def test_source_reference_rows_and_reruns_link_to_each_other(client: Any, django_assert_num_queries: Any) -> None:
    import_data()
    k10 = reruns_by_revision(K10)
    plain = plain_run_page_queries(client)  # the SOL Bound row: no rerun of it, no query for one
    for submitter, revision in rerun_bundles.REMEASURED_ROWS["sol-execbench"].items():
        source_row = Run.objects.get(source__slug="sol-execbench", benchmark__native_id=K10, submitter=submitter)
        rerun = k10[revision]
        with django_assert_num_queries(plain + 1):
            text = page(client, source_row.get_absolute_url())
        assert (
            "Re-measured by KernelIndex KernelIndex re-measured this implementation on its own GPU under its own "
            "harness: Run "
        ) in text
        assert (
            f"Run {rerun.public_id} · KernelIndex · {revision} · NVIDIA H200 · KernelIndex rerun harness "
            "0.1.0 · 40.7 µs median · evidence: KernelIndex rerun"
        ) in text
        text = page(client, rerun.get_absolute_url())
        assert (
            f"What this rerun re-measured The same code as these rows of the source's boards: Run "
            f"{source_row.public_id} · {submitter} · NVIDIA B200 · SOL-ExecBench evaluation stack v1.1"
        ) in text
    # The torch.compile rerun has no source row: no section, no query for one.
    with django_assert_num_queries(plain):
        assert "What this rerun re-measured" not in page(client, k10["torch-compile"].get_absolute_url())


def test_a_hidden_rerun_is_not_linked_from_the_source_row(client: Any) -> None:
    import_data()
    rerun = reruns_by_revision(K10)["reference"]
    Run.objects.filter(pk=rerun.pk).update(visibility="hidden")
    source_row = Run.objects.get(source__slug="sol-execbench", submitter="Reference Implementation")
    assert rerun.public_id not in page(client, source_row.get_absolute_url())


def test_the_rerun_bundles_in_data_are_unchanged_by_the_import() -> None:
    # The page's manifest is the bundle as the harness wrote it: digests are stable.
    import_data(RERUNS)
    for path in sorted(RERUNS.glob("*.json")):
        bundle = json.loads(path.read_text())
        run = Run.objects.get(digest=canonical.digest_of(bundle["run"]))
        exported = bundle_export(run, full=True)
        for role in ("run", "protocol", "environment", "workload", "implementation"):
            assert canonical.digest_of(exported[role]) == canonical.digest_of(bundle[role]), (path.name, role)
        assert exported["run"]["spec"] == bundle["run"]["spec"]


def test_the_kernelindex_source_page_lists_the_benchmarks_it_reran(client: Any) -> None:
    import_data()
    text = page(client, "/sources/kernelindex/")
    # 15 benchmarks rerun on 2026-12-01 (010 and 062 under both harness versions) and 7 more on 2026-12-02
    assert "Benchmarks (22) benchmark collection native id runs " in text
    assert f"Attention value projection with transpose L1 {K10} 28 " in text
    assert f"KV cache update with RoPE backward L1 {K62} 7 " in text
    assert "Git vision encoder layer L2 079_git_vision_encoder_layer 1 " in text
    assert "/benchmarks/sol-execbench/" + K62 in client.get("/sources/kernelindex/").content.decode()
