"""Unit tests of the rerun harness (reruns/harness): correctness checking, status handling,
manifest building and digests. They run without a GPU; the GPU-only parts are skipped there.
"""

from __future__ import annotations

import hashlib
import json
import math
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import rfc8785  # noqa: E402

from reruns.harness import build_bundle, digest, verify_bundle  # noqa: E402
from reruns.harness import status as st  # noqa: E402
from reruns.harness.canonical import CanonicalJSONError, canonical_bytes  # noqa: E402
from reruns.harness.correctness import compare_outputs, compare_tensor, normalize_outputs  # noqa: E402
from reruns.harness.definition import (  # noqa: E402
    effective_tolerance,
    eval_expression,
    load_definition,
    load_workload,
)
from reruns.harness.implementation import ImplementationError, resolve_implementation  # noqa: E402
from reruns.harness.manifest import (  # noqa: E402
    API_VERSION,
    architecture_for,
    geomean,
    normalize_product,
    protocol_document,
)
from reruns.harness.runner import aggregate_case, run_rerun  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
L1 = ROOT / "data" / "sol-execbench" / "definitions" / "L1"
K10 = L1 / "010_attention_value_projection_with_transpose"
K62 = L1 / "062_kv_cache_update_with_rope_backward"
KERNEL10 = ROOT / "data" / "sol-execbench" / "kernels" / "kernel-10.json"
RERUNS = ROOT / "data" / "reruns"
REFERENCE_MANIFEST = ROOT / "data" / "reference" / "run-01a0352b.manifest.json"

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

TOL = {"max_atol": 1e-3, "max_rtol": 1e-2, "required_matched_ratio": 1.0, "max_error_cap": None}


# ------------------------------------------------------------------ correctness checking


def test_exact_match_passes():
    ref = torch.randn(64)
    res = compare_tensor(ref.clone(), ref, TOL)
    assert res.status == st.PASSED
    assert res.max_abs == 0.0 and res.max_rel == 0.0 and res.matched_ratio == 1.0
    assert res.to_correctness() == {
        "maxAbsoluteError": 0.0,
        "maxRelativeError": 0.0,
        "matchedRatio": 1.0,
        "hasNan": False,
        "hasInf": False,
    }


def test_within_atol_plus_rtol_passes_and_outside_fails():
    ref = torch.full((10,), 2.0)
    ok = ref + (1e-3 + 1e-2 * 2.0) * 0.99  # just inside atol + rtol*|ref|
    assert compare_tensor(ok, ref, TOL).status == st.PASSED
    bad = ref.clone()
    bad[3] += 0.5
    res = compare_tensor(bad, ref, TOL)
    assert res.status == st.INCORRECT_NUMERICAL
    assert res.matched_ratio == pytest.approx(0.9)
    assert res.max_abs == pytest.approx(0.5)
    assert "matched ratio" in res.detail


def test_required_matched_ratio_allows_some_mismatches():
    ref = torch.zeros(100)
    out = ref.clone()
    out[:5] = 1.0
    assert compare_tensor(out, ref, {**TOL, "required_matched_ratio": 0.95}).status == st.PASSED
    assert compare_tensor(out, ref, {**TOL, "required_matched_ratio": 0.96}).status == st.INCORRECT_NUMERICAL


def test_max_error_cap_fails_even_when_ratio_is_met():
    ref = torch.zeros(100)
    out = ref.clone()
    out[0] = 10.0
    tol = {**TOL, "required_matched_ratio": 0.9, "max_error_cap": 1.0}
    res = compare_tensor(out, ref, tol)
    assert res.status == st.INCORRECT_NUMERICAL and "cap" in res.detail


def test_relative_error_uses_atol_as_floor():
    ref = torch.tensor([0.0, 1.0])
    out = torch.tensor([1e-3, 1.0])
    res = compare_tensor(out, ref, {**TOL, "max_atol": 1e-2})
    assert res.max_rel == pytest.approx(1e-3 / 1e-2)
    assert math.isfinite(res.max_rel)


@pytest.mark.parametrize("bad, flag", [(float("nan"), "hasNan"), (float("inf"), "hasInf"), (float("-inf"), "hasInf")])
def test_nan_and_inf_in_output_fail_and_are_flagged(bad, flag):
    ref = torch.ones(8)
    out = ref.clone()
    out[2] = bad
    res = compare_tensor(out, ref, {**TOL, "required_matched_ratio": 0.5})
    assert res.status == st.INCORRECT_NUMERICAL  # even though 7/8 match
    corr = res.to_correctness()
    assert corr[flag] is True
    # the record never carries NaN/Infinity
    json.dumps(corr, allow_nan=False)
    canonical_bytes(corr)


def test_non_finite_matching_the_reference_is_accepted():
    ref = torch.tensor([1.0, float("nan"), float("inf")])
    res = compare_tensor(ref.clone(), ref, TOL)
    assert res.status == st.PASSED and res.has_nan and res.has_inf


def test_shape_and_dtype_mismatch():
    ref = torch.zeros(4, 4, dtype=torch.bfloat16)
    assert compare_tensor(torch.zeros(4, 5, dtype=torch.bfloat16), ref, TOL).status == st.INCORRECT_SHAPE
    assert compare_tensor(torch.zeros(4, 4, dtype=torch.float32), ref, TOL).status == st.INCORRECT_DTYPE


def test_output_count_and_order():
    a, b = torch.ones(2), torch.zeros(3)
    assert normalize_outputs({"y": b, "x": a}, ["x", "y"]) == [a, b]
    res = compare_outputs((a,), [a, b], TOL, ["x", "y"])
    assert res.status == st.INCORRECT_SHAPE
    res = compare_outputs((a, b + 1), [a, b], TOL, ["x", "y"])
    assert res.status == st.INCORRECT_NUMERICAL and res.detail.startswith("y:")


def test_bf16_comparison_is_done_in_float32():
    ref = torch.randn(256, dtype=torch.bfloat16)
    res = compare_tensor(ref.clone(), ref, {**TOL, "max_atol": 1e-5, "max_rtol": 0.05})
    assert res.status == st.PASSED


# ------------------------------------------------------------------ definitions & implementations


def test_real_definitions_load_and_resolve():
    d62 = load_definition(K62)
    cases = load_workload(K62)
    assert d62.name == "062_kv_cache_update_with_rope_backward"
    assert d62.custom_inputs_entrypoint == "get_inputs"
    assert len(cases) == 16
    axes = d62.resolve_axes(cases[0].axes)
    assert axes["head_dim"] == 128 and axes["batch_size"] == cases[0].axes["batch_size"]
    d10 = load_definition(K10)
    c10 = load_workload(K10)[0]
    resolved = d10.resolve_axes(c10.axes)
    assert resolved["kv_projection_size"] == 1024  # expr "num_kv_heads * head_dim"
    assert d10.input_shapes(resolved)["v_proj_weight"] == (1024, 5120)
    assert c10.effective_tolerance["max_atol"] == 1e-05
    assert c10.effective_tolerance["required_matched_ratio"] == 1.0  # SOL default


def test_tolerance_defaults_and_safe_expressions():
    assert effective_tolerance({}) == {
        "max_atol": 0.01,
        "max_rtol": 0.01,
        "required_matched_ratio": 1.0,
        "max_error_cap": None,
    }
    assert eval_expression("a * b // 2", {"a": 3, "b": 4}) == 6
    with pytest.raises(ValueError):
        eval_expression("__import__('os').system('true')", {})


def test_implementation_specs():
    d10 = load_definition(K10)
    ref = resolve_implementation("reference", d10)
    assert ref.revision == "reference" and not ref.compile
    assert ref.code_digest == "sha256:" + hashlib.sha256(d10.reference.encode()).hexdigest()
    comp = resolve_implementation("torch-compile", d10)
    assert comp.compile and comp.code_digest == ref.code_digest
    base = resolve_implementation(f"baseline:{KERNEL10}", d10)
    source = json.loads(KERNEL10.read_text())["response"]["data"]["baseline"]
    assert base.revision == "scoring-baseline"
    assert base.code_digest == "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    with pytest.raises(ImplementationError):
        resolve_implementation(f"baseline:{KERNEL10}", load_definition(K62))  # another kernel
    with pytest.raises(ImplementationError):
        resolve_implementation("no-such-solution.json", d10)


def test_solution_file_format(tmp_path):
    d10 = load_definition(K10)
    sol = {
        "name": "my_triton_v1",
        "definition": d10.name,
        "author": "someone | team",
        "spec": {"language": "triton", "entry_point": "main.py::run"},
        "sources": [
            {"path": "main.py", "content": "def run(a, b, out):\n    pass\n"},
            {"path": "util.py", "content": "X = 1\n"},
        ],
    }
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(sol))
    impl = resolve_implementation(str(path), d10)
    assert impl.revision == "my_triton_v1"
    assert impl.languages == ["triton", "pytorch"]
    assert impl.destination_passing_style is True  # SOL-ExecBench's default
    assert impl.submitter == "someone | team"
    expected = (
        "sha256:"
        + hashlib.sha256(
            rfc8785.dumps(
                [
                    {"path": "main.py", "content": sol["sources"][0]["content"]},
                    {"path": "util.py", "content": "X = 1\n"},
                ]
            )
        ).hexdigest()
    )
    assert impl.code_digest == expected


# ------------------------------------------------------------------ manifest & digests

CASES = [
    {"index": 0, "id": "case-a", "axes": {"n": 4}, "tolerance": {"max_atol": 1e-5, "max_rtol": 0.05}},
    {"index": 1, "id": "case-b", "axes": {"n": 8}, "tolerance": {}},
]
IMPL = {
    "revision": "reference",
    "languages": ["pytorch"],
    "codeDigest": "sha256:" + "ab" * 32,
    "project": "KernelIndex baselines",
    "submitter": "KernelIndex",
}
ENV = {
    "product": "H200",
    "architecture": "sm_90",
    "clocks": {"lockedByHarness": False, "maxSmMHz": 1980, "maxMemoryMHz": 3201},
    "libraries": {
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "cuda": "13.0",
        "driver": "580.159.04",
        "python": "3.12.3",
    },
}
CORR = {"maxAbsoluteError": 0.0, "maxRelativeError": 0.0, "matchedRatio": 1.0, "hasNan": False, "hasInf": False}


def _results(medians_a=(100.0, 110.0, 105.0), medians_b=(400.0, 380.0, 420.0), status_b=st.PASSED):
    return [
        {
            "index": 0,
            "id": "case-a",
            "status": st.PASSED,
            "timer": "cuda_graph",
            "trialMediansNs": list(medians_a),
            "correctness": CORR,
        },
        {
            "index": 1,
            "id": "case-b",
            "status": status_b,
            "timer": "cuda_events",
            "trialMediansNs": list(medians_b) if status_b == st.PASSED else [None] * 3,
            "correctness": CORR,
            "detail": None if status_b == st.PASSED else "boom",
        },
    ]


def _bundle(**overrides):
    kwargs = dict(
        definition_name="062_kv_cache_update_with_rope_backward",
        cases=CASES,
        implementation=IMPL,
        environment=ENV,
        case_results=_results(),
        observed_at="2026-11-30T15:51:07.123Z",
        settings={"trials": 3},
    )
    kwargs.update(overrides)
    return build_bundle(**kwargs)


def test_bundle_shape():
    b = _bundle()
    assert set(b) == {"run", "protocol", "environment", "workload", "implementation"}
    kinds = {k: d["kind"] for k, d in b.items()}
    assert kinds == {
        "run": "BenchmarkRun",
        "protocol": "BenchmarkProtocol",
        "environment": "ExecutionEnvironment",
        "workload": "Workload",
        "implementation": "Implementation",
    }
    for doc in b.values():
        assert doc["apiVersion"] == API_VERSION == "kernelindex.dev/v1alpha1"
        assert set(doc) == {"apiVersion", "kind", "metadata", "spec"}
        assert doc["metadata"]["name"] and doc["metadata"]["title"]
    p = b["protocol"]["spec"]
    assert p["harness"]["name"] == "KernelIndex rerun harness"
    assert p["measurement"]["timer"] == "kernel_time" and p["measurement"]["primaryTimer"] == "kernelTime"
    assert p["measurement"]["primaryStatistic"] == "median"
    assert p["measurement"]["iterations"] == 50 and p["measurement"]["coldL2"] is True
    assert p["correctness"]["comparator"] == "kernelindex_allclose"
    assert p["comparability"]["family"] == "kernelindex_rerun"
    assert p["ranking"] == {"metric": "latency", "direction": "ascending"}
    hw = b["environment"]["spec"]["hardware"]
    assert hw["product"] == "NVIDIA H200" and hw["architecture"] == "sm_90" and hw["vendor"] == "nvidia"
    w = b["workload"]["spec"]
    assert w["benchmark"] == {"source": "sol-execbench", "nativeId": "062_kv_cache_update_with_rope_backward"}
    assert w["suite"] == {"caseCount": 2} and w["cases"][0]["id"] == "case-a"
    i = b["implementation"]["spec"]
    assert i["revision"] == "reference" and i["codeDigest"] == IMPL["codeDigest"]
    r = b["run"]
    assert r["metadata"]["title"] == "KernelIndex rerun · reference · 062_kv_cache_update_with_rope_backward · H200"
    s = r["spec"]
    assert s["status"] == "passed" and "statusDetail" not in s
    assert s["observedAt"] == "2026-11-30T15:51:07.123Z"
    assert s["sourceNative"]["source"] == "kernelindex"
    assert (
        s["sourceNative"]["externalId"]
        == "rerun/062_kv_cache_update_with_rope_backward/reference/H200/20261130T155107Z"
    )
    # _results() gives no kernel times: the run falls back to CUDA-event time as its primary
    assert s["timing"]["primaryTimer"] == "eventTime"
    assert s["cases"][1]["timer"] == "cuda_events"
    json.dumps(b, allow_nan=False)


def test_timing_statistics():
    s = _bundle()["run"]["spec"]
    per_case = [105.0, 400.0]  # medians over trials
    assert s["timing"]["latencyNs"]["median"] == pytest.approx(geomean(per_case), abs=1e-3)
    trials = [geomean([100.0, 400.0]), geomean([110.0, 380.0]), geomean([105.0, 420.0])]
    assert [t["latencyNs"] for t in s["timing"]["trials"]] == pytest.approx(trials, abs=1e-3)
    assert s["timing"]["spread"]["maxOverMin"] == pytest.approx(max(trials) / min(trials), abs=1e-6)
    assert s["sourceNative"]["metrics"]["latency_ms"] == pytest.approx(geomean(per_case) / 1e6)
    assert s["cases"][0]["latencyNs"] == {"median": 105.0}


def test_digests_in_run_equal_the_documents_digests():
    b = _bundle()
    spec = b["run"]["spec"]
    for key in ("protocol", "workload", "environment", "implementation"):
        assert spec[f"{key}Digest"] == digest(b[key])
        body = {k: v for k, v in b[key].items() if k != "metadata"}
        assert digest(b[key]) == "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    assert verify_bundle(b) == []


def test_digests_are_stable_and_exclude_metadata():
    a, b = _bundle(), _bundle()
    assert all(digest(a[k]) == digest(b[k]) for k in a)
    assert canonical_bytes(a) == canonical_bytes(b)
    renamed = json.loads(json.dumps(a["protocol"]))
    renamed["metadata"] = {"name": "other", "title": "Other", "labels": {"x": "y"}}
    assert digest(renamed) == digest(a["protocol"])
    changed = json.loads(json.dumps(a["protocol"]))
    changed["spec"]["measurement"]["iterations"] = 51
    assert digest(changed) != digest(a["protocol"])
    # the protocol does not depend on the run: same settings, same digest
    assert digest(protocol_document({"trials": 3})) == digest(a["protocol"])


def test_tampered_bundle_fails_verification():
    b = _bundle()
    b["environment"]["spec"]["hardware"]["product"] = "NVIDIA B200"
    problems = verify_bundle(b)
    assert len(problems) == 1 and problems[0].startswith("environment:")


def test_digest_rule_matches_the_reference_bundle():
    ref = json.loads(REFERENCE_MANIFEST.read_text())
    assert digest(ref["protocol"]) == ref["run"]["spec"]["protocolDigest"]
    assert digest(ref["environment"]) == ref["run"]["spec"]["environmentDigest"]


def test_failed_case_gives_failed_run_without_latency():
    b = _bundle(case_results=_results(status_b=st.RUNTIME_ERROR))
    s = b["run"]["spec"]
    assert s["status"] == "failed" and s["statusDetail"] == st.RUNTIME_ERROR
    # no latency at all rather than null (the importer wants numbers)
    assert s["timing"]["latencyNs"] == {} and s["cases"][1]["latencyNs"] == {}
    assert "latency_ms" not in s["sourceNative"]["metrics"]
    assert s["cases"][0]["latencyNs"] == {"median": 105.0}
    assert s["cases"][1]["status"] == st.RUNTIME_ERROR and s["cases"][1]["detail"] == "boom"
    assert verify_bundle(b) == []
    json.dumps(b, allow_nan=False)


def test_jcs_rejects_what_it_cannot_carry():
    for bad in (float("nan"), float("inf"), 2**53, "a\x00b"):
        with pytest.raises(CanonicalJSONError):
            canonical_bytes({"x": bad})
    with pytest.raises(CanonicalJSONError):
        _bundle(implementation={**IMPL, "revision": "bad\x00"})


def test_product_normalisation_and_architecture():
    assert normalize_product("H200") == "NVIDIA H200"
    assert normalize_product("NVIDIA H200") == "NVIDIA H200"
    assert normalize_product("nvidia  B200") == "NVIDIA B200"
    assert architecture_for("NVIDIA H200") == "sm_90"
    assert architecture_for("B200") == "sm_100"
    assert architecture_for("NVIDIA H200", (9, 0)) == "sm_90"


def test_aggregate_case_takes_worst_trial():
    ok = {"status": st.PASSED, "timer": "cuda_graph", "medianNs": 10.0, "correctness": CORR}
    bad = {
        "status": st.INCORRECT_NUMERICAL,
        "detail": "x",
        "correctness": {**CORR, "maxAbsoluteError": 0.5, "matchedRatio": 0.9},
    }
    agg = aggregate_case(0, "c", [ok, bad, ok])
    assert agg["status"] == st.INCORRECT_NUMERICAL and agg["detail"] == "x"
    assert agg["trialMediansNs"] == [10.0, None, 10.0]
    assert agg["correctness"]["maxAbsoluteError"] == 0.5 and agg["correctness"]["matchedRatio"] == 0.9


@pytest.mark.parametrize("path", sorted(RERUNS.glob("*.json")), ids=lambda p: p.name)
def test_committed_rerun_bundles_verify(path):
    b = json.loads(path.read_text())
    assert verify_bundle(b) == []
    spec = b["run"]["spec"]
    assert b["environment"]["spec"]["hardware"]["product"] == "NVIDIA H200"
    assert b["environment"]["spec"]["hardware"]["architecture"] == "sm_90"
    assert b["protocol"]["spec"]["measurement"]["trials"] >= 3
    if spec["status"] == "passed":
        assert len(spec["timing"]["trials"]) >= 3
        assert all(c["timer"] in ("cuda_graph", "cuda_events", "kernel_time") for c in spec["cases"])


# ------------------------------------------------------------------ status handling (workers run)

TINY_REFERENCE = textwrap.dedent("""
    import torch

    def run(x, y):
        return x + y
""")


@pytest.fixture
def tiny(tmp_path):
    d = tmp_path / "tiny_add"
    d.mkdir()
    (d / "definition.json").write_text(
        json.dumps(
            {
                "name": "tiny_add",
                "axes": {"n": {"type": "var"}},
                "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "float32"}},
                "outputs": {"z": {"shape": ["n"], "dtype": "float32"}},
                "reference": TINY_REFERENCE,
            }
        )
    )
    rows = [
        {
            "uuid": "tiny-0",
            "axes": {"n": 4},
            "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
            "tolerance": {"max_atol": 1e-5, "max_rtol": 1e-5},
        },
        {
            "uuid": "tiny-1",
            "axes": {"n": 8},
            "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
            "tolerance": {"max_atol": 1e-5, "max_rtol": 1e-5},
        },
    ]
    (d / "workload.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return d


def _solution(tmp_path, body: str, dps: bool = False, name: str = "sol") -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "name": name,
                "definition": "tiny_add",
                "author": "tester",
                "spec": {"language": "pytorch", "entry_point": "main.py::run", "destination_passing_style": dps},
                "sources": [
                    {"path": "main.py", "content": "import os, time\nimport torch\n\n" + textwrap.dedent(body)}
                ],
            }
        )
    )
    return str(path)


def _rerun(definition, solution, **kw):
    opts = dict(trials=1, iterations=2, warmup_iterations=0, warmup_seconds=0, device="cpu", case_timeout=60)
    opts.update(kw)
    bundle = run_rerun(str(definition), solution, **opts)
    assert verify_bundle(bundle) == []
    json.dumps(bundle, allow_nan=False)
    return bundle


def _statuses(bundle):
    return [c["status"] for c in bundle["run"]["spec"]["cases"]]


@pytest.mark.slow
def test_reference_rerun_passes_on_cpu(tiny):
    b = _rerun(tiny, "reference", trials=2)
    s = b["run"]["spec"]
    assert s["status"] == "passed" and _statuses(b) == [st.PASSED, st.PASSED]
    assert len(s["timing"]["trials"]) == 2 and s["timing"]["spread"]["maxOverMin"] >= 1.0
    assert b["workload"]["spec"]["suite"]["caseCount"] == 2


@pytest.mark.slow
def test_raising_implementation_gives_runtime_error_run(tiny, tmp_path):
    sol = _solution(
        tmp_path,
        """
        def run(x, y):
            raise RuntimeError("kernel exploded")
    """,
    )
    b = _rerun(tiny, sol)
    s = b["run"]["spec"]
    assert s["status"] == "failed" and s["statusDetail"] == st.RUNTIME_ERROR
    assert _statuses(b) == [st.RUNTIME_ERROR, st.RUNTIME_ERROR]
    assert "kernel exploded" in s["cases"][0]["detail"]
    assert s["timing"]["latencyNs"] == {}


@pytest.mark.slow
def test_case_over_time_limit_is_timeout_and_next_case_still_runs(tiny, tmp_path):
    sol = _solution(
        tmp_path,
        """
        def run(x, y):
            if x.numel() == 4:
                time.sleep(120)
            return x + y
    """,
    )
    b = _rerun(tiny, sol, case_timeout=3)
    assert _statuses(b) == [st.TIMEOUT, st.PASSED]
    s = b["run"]["spec"]
    assert s["status"] == "failed" and s["statusDetail"] == st.TIMEOUT
    assert s["timing"]["trials"][0]["processes"] == 2  # resumed in a fresh process


@pytest.mark.slow
def test_crashing_process_is_runtime_error_not_harness_crash(tiny, tmp_path):
    sol = _solution(
        tmp_path,
        """
        def run(x, y):
            if x.numel() == 4:
                os._exit(3)
            return x + y
    """,
    )
    b = _rerun(tiny, sol)
    assert _statuses(b) == [st.RUNTIME_ERROR, st.PASSED]
    assert "died" in b["run"]["spec"]["cases"][0]["detail"]


@pytest.mark.slow
def test_wrong_outputs_statuses(tiny, tmp_path):
    cases = {
        "dtype": ("return (x + y).double()", st.INCORRECT_DTYPE),
        "shape": ("return torch.cat([x + y, x])", st.INCORRECT_SHAPE),
        "numerical": ("return x + y + 1", st.INCORRECT_NUMERICAL),
        "nan": ("z = x + y\n    z[0] = float('nan')\n    return z", st.INCORRECT_NUMERICAL),
    }
    for name, (body, expected) in cases.items():
        sol = _solution(tmp_path, f"def run(x, y):\n    {body}\n", name=name)
        b = _rerun(tiny, sol, max_cases=1)
        assert _statuses(b) == [expected], name
        if name == "nan":
            assert b["run"]["spec"]["cases"][0]["correctness"]["hasNan"] is True


@pytest.mark.slow
def test_dps_solution_and_compile_error(tiny, tmp_path):
    good = _solution(
        tmp_path,
        """
        def run(x, y, z):
            torch.add(x, y, out=z)
    """,
        dps=True,
        name="dps",
    )
    b = _rerun(tiny, good)
    assert b["run"]["spec"]["status"] == "passed"
    assert b["implementation"]["spec"]["revision"] == "dps"
    broken = _solution(tmp_path, "def run(x, y)\n    return x\n", name="broken")
    b = _rerun(tiny, broken)
    assert _statuses(b) == [st.COMPILE_ERROR, st.COMPILE_ERROR]


# ------------------------------------------------------------------ GPU only


@needs_cuda
def test_gpu_rerun_times_with_graph_or_events(tiny, tmp_path):
    b = _rerun(tiny, "reference", device="cuda", trials=3, iterations=10, warmup_iterations=2)
    s = b["run"]["spec"]
    assert s["status"] == "passed"
    hw = b["environment"]["spec"]["hardware"]
    assert hw["product"].startswith("NVIDIA ") and hw["architecture"].startswith("sm_")
    assert len(s["timing"]["trials"]) == 3 and s["timing"]["spread"]["maxOverMin"] >= 1.0
    assert s["timing"]["primaryTimer"] == "kernelTime"
    assert all(c["timer"] == "kernel_time" for c in s["cases"])
    assert all(c["timers"]["eventTime"]["timer"] == "cuda_graph" for c in s["cases"])


@needs_cuda
def test_gpu_capture_failure_falls_back_to_events(tiny, tmp_path):
    sol = _solution(
        tmp_path,
        """
        def run(x, y):
            scale = float(x.abs().sum().item()) * 0.0  # host sync: cannot be captured
            return x + y + scale
    """,
    )
    b = _rerun(tiny, sol, device="cuda", trials=1, iterations=10, warmup_iterations=2)
    cases = b["run"]["spec"]["cases"]
    assert [c["status"] for c in cases] == [st.PASSED, st.PASSED]
    assert all(c["timers"]["eventTime"]["timer"] == "cuda_events" and "graph" in c["timerNote"] for c in cases)
