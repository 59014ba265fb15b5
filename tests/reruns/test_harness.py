"""Tests of the rerun harness's PyTorch parts (reruns/harness): correctness checking, and whole
reruns on the CPU (status handling) and on a GPU. They need torch (skipped without it; the
torch-free parts are tested in test_harness_rules.py); the GPU-only tests need CUDA.
"""

from __future__ import annotations

import json
import math
import textwrap

import pytest

torch = pytest.importorskip("torch")


from kernelindex.canonical import dumps as canonical_bytes  # noqa: E402
from reruns.harness import status as st  # noqa: E402
from reruns.harness import verify_bundle  # noqa: E402
from reruns.harness.correctness import compare_outputs, compare_tensor, normalize_outputs  # noqa: E402
from reruns.harness.runner import run_rerun  # noqa: E402

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
