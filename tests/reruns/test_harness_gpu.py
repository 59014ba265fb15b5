"""Kernel-time timer on a real GPU (issue 14). Skipped where there is no CUDA device."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch with a CUDA GPU")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

import json  # noqa: E402

from tests.reruns.test_harness import TINY_REFERENCE, _rerun, _solution  # noqa: E402


@pytest.fixture
def tiny(tmp_path):
    d = tmp_path / "tiny_add"
    d.mkdir()
    spec = {"shape": ["n"], "dtype": "float32"}
    (d / "definition.json").write_text(
        json.dumps(
            {
                "name": "tiny_add",
                "axes": {"n": {"type": "var"}},
                "inputs": {"x": spec, "y": spec},
                "outputs": {"z": spec},
                "reference": TINY_REFERENCE,
            }
        )
    )
    rows = [
        {
            "uuid": f"tiny-{i}",
            "axes": {"n": n},
            "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
            "tolerance": {"max_atol": 1e-5, "max_rtol": 1e-5},
        }
        for i, n in enumerate((4096, 1 << 20))
    ]
    (d / "workload.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return d


def test_kernel_time_counts_only_the_call_and_stays_below_graph_time(tiny, tmp_path):
    b = _rerun(tiny, "reference", device="cuda", trials=3, iterations=20, warmup_iterations=3)
    s = b["run"]["spec"]
    assert s["status"] == "passed" and s["timing"]["primaryTimer"] == "kernelTime"
    for c in s["cases"]:
        kt, ev = c["timers"]["kernelTime"], c["timers"]["eventTime"]
        # x + y is one kernel: the L2 flush (a fill) and the two input restores (copies) that
        # precede every call are not attributed to it
        assert kt["activitiesPerCall"] == 1 and kt["activityKinds"] == {"kernel": 1}
        assert ev["timer"] == "cuda_graph"
        assert 0 < kt["latencyNs"]["median"] <= ev["latencyNs"]["median"]


def test_kernel_time_leaves_out_host_waits_inside_the_call(tiny, tmp_path):
    sol = _solution(
        tmp_path,
        """
        def run(x, y):
            time.sleep(0.002)  # host work between two kernels
            z = x + y
            torch.cuda.synchronize()
            time.sleep(0.002)
            return z * 1.0
    """,
    )
    b = _rerun(tiny, sol, device="cuda", trials=1, iterations=10, warmup_iterations=2)
    for c in b["run"]["spec"]["cases"]:
        kt, ev = c["timers"]["kernelTime"], c["timers"]["eventTime"]
        assert ev["timer"] == "cuda_events"  # the sync makes capture fail
        assert kt["activitiesPerCall"] == 2
        assert ev["latencyNs"]["median"] > 2_000_000 > 100_000 > kt["latencyNs"]["median"]
