"""Kernel-time timer and two-timer bundles (issue 14): the torch-free parts.

No torch and no GPU needed (this module never skips): attribution of profiler activity
records to calls, the per-case kernel-time figures, aggregation over trials, the bundle's
two timers, and the committed kernel-time bundles in data/reruns/.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reruns.harness import build_bundle, verify_bundle
from reruns.harness import status as st
from reruns.harness.kerneltime import MARKER, activities_per_call, kernel_time_result
from reruns.harness.manifest import EVENT_TIME, KERNEL_TIME, geomean, protocol_document
from reruns.harness.runner import aggregate_case

RERUNS = Path(__file__).resolve().parents[2] / "data" / "reruns"
ISSUE14_BUNDLES = sorted(RERUNS.glob("*-20261201.json"))


# ------------------------------------------------------------------ a synthetic Kineto trace


class Trace:
    """Builds a chrome trace the way torch.profiler exports one (times in microseconds)."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.corr = 100

    def launch(self, ts: float, dur: float, cat: str = "kernel", api: str = "cuda_runtime", gpu_ts: float = 0.0):
        self.corr += 1
        self.events.append(
            {
                "ph": "X",
                "cat": api,
                "name": "cudaLaunchKernel",
                "ts": ts,
                "dur": 2.0,
                "args": {"correlation": self.corr},
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": f"{cat}-{self.corr}",
                "ts": gpu_ts or ts + 5,
                "dur": dur,
                "args": {"correlation": self.corr},
            }  # fmt: skip
        )
        return self.corr

    def call(self, ts: float, dur: float) -> None:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": MARKER, "ts": ts, "dur": dur, "args": {}})
        # The trap: the range's GPU-side span; never summed.
        self.events.append(
            {"ph": "X", "cat": "gpu_user_annotation", "name": MARKER, "ts": ts, "dur": 400.0, "args": {}}
        )

    def doc(self) -> dict:
        return {"traceEvents": [*self.events, {"ph": "M", "name": "process_name", "args": {}}]}


def _three_calls() -> Trace:
    t = Trace()
    for i in range(3):
        base = 1000.0 * i
        t.launch(base + 1, 50.0, cat="gpu_memcpy")  # input restore: outside the call
        t.launch(base + 10, 300.0, cat="kernel")  # L2 flush: outside the call
        t.call(base + 100, 50.0)
        t.launch(base + 110, 10.0 + i, cat="kernel")
        t.launch(base + 120, 3.0, cat="gpu_memcpy")  # the call's own host copy
        t.launch(base + 130, 7.0, cat="kernel", api="cuda_driver")  # Triton: cuLaunchKernel
        t.launch(base + 140, 1.0, cat="gpu_memset")
    return t


def test_activities_are_summed_per_call_and_the_flush_and_restore_are_left_out():
    s = activities_per_call(_three_calls().doc())
    assert [round(c.ns) for c in s.calls] == [21000, 22000, 23000]  # 10+i + 3 + 7 + 1 us
    assert [c.count for c in s.calls] == [4, 4, 4]
    assert s.calls[0].by_category == {"kernel": 2, "gpu_memcpy": 1, "gpu_memset": 1}
    assert s.unattributed == 6  # 3 restores + 3 flushes
    assert s.orphans == 0


def test_activities_are_joined_by_launch_time_not_by_gpu_time():
    # A kernel that runs on the GPU long after its call's host range ended (the GPU was
    # behind) still belongs to the call; one launched after the range does not.
    t = Trace()
    t.call(100.0, 20.0)
    t.launch(105.0, 8.0, gpu_ts=5000.0)
    t.launch(130.0, 99.0, gpu_ts=120.0)  # launched after the range, ran "inside" it
    s = activities_per_call(t.doc())
    assert [c.ns for c in s.calls] == [8000.0] and s.unattributed == 1


def test_overlapping_activities_on_two_streams_are_summed():
    t = Trace()
    t.call(100.0, 20.0)
    t.launch(101.0, 10.0, gpu_ts=200.0)
    t.launch(102.0, 10.0, gpu_ts=205.0)
    assert activities_per_call(t.doc()).calls[0].ns == 20000.0


def test_kernel_time_result_discards_warmup_and_takes_the_median():
    res = kernel_time_result(activities_per_call(_three_calls().doc()), warmup=1, iterations=2)
    assert res["kernelMedianNs"] == 22500.0
    assert (res["kernelMinNs"], res["kernelMaxNs"]) == (22000.0, 23000.0)
    assert res["kernelActivitiesPerCall"] == 4
    assert res["kernelActivityKinds"] == {"gpu_memcpy": 1, "gpu_memset": 1, "kernel": 2}


def test_kernel_time_result_refuses_what_it_cannot_measure():
    summary = activities_per_call(_three_calls().doc())
    with pytest.raises(ValueError, match="call ranges"):
        kernel_time_result(summary, warmup=1, iterations=5)
    t = _three_calls()
    t.call(5000.0, 10.0)  # a call that launched nothing
    with pytest.raises(ValueError, match="launched no GPU activity"):
        kernel_time_result(activities_per_call(t.doc()), warmup=0, iterations=4)
    t = _three_calls()
    t.events = [e for e in t.events if not (e["cat"] == "cuda_driver")]  # launch records missing
    with pytest.raises(ValueError, match="no launch record"):
        kernel_time_result(activities_per_call(t.doc()), warmup=0, iterations=3)


def test_a_bare_event_list_is_accepted():
    assert len(activities_per_call(_three_calls().doc()["traceEvents"]).calls) == 3


# ------------------------------------------------------------------ aggregation and the bundle

CORR = {"maxAbsoluteError": 0.0, "maxRelativeError": 0.0, "matchedRatio": 1.0, "hasNan": False, "hasInf": False}
CASES = [
    {"index": 0, "id": "case-a", "axes": {"n": 1}, "tolerance": {"max_atol": 1e-5}},
    {"index": 1, "id": "case-b", "axes": {"n": 2}, "tolerance": {"max_atol": 1e-5}},
]
IMPL = {"revision": "reference", "languages": ["pytorch"], "codeDigest": "sha256:" + "ab" * 32}
ENV = {"product": "NVIDIA H200", "architecture": "sm_90", "libraries": {"torch": "2.11.0"}}


def _trial(event_ns: float, kernel_ns: float | None, timer: str = "cuda_graph", **extra) -> dict:
    out = {"status": st.PASSED, "timer": timer, "medianNs": event_ns, "correctness": CORR, **extra}
    if kernel_ns is not None:
        out.update(kernelMedianNs=kernel_ns, kernelActivitiesPerCall=3, kernelActivityKinds={"kernel": 3})
    return out


def _cases(kernel_b=(300.0, 310.0, 305.0)):
    a = aggregate_case(0, "case-a", [_trial(100.0, 90.0), _trial(110.0, 91.0), _trial(105.0, 92.0)])
    b = aggregate_case(
        1,
        "case-b",
        [_trial(e, k, timer="cuda_events") for e, k in zip((400.0, 380.0, 420.0), kernel_b, strict=True)],
    )
    return [a, b]


def _bundle(case_results, **kw):
    return build_bundle(
        definition_name="062_kv_cache_update_with_rope_backward",
        cases=CASES,
        implementation=IMPL,
        environment=ENV,
        case_results=case_results,
        observed_at="2026-12-01T22:27:43.541Z",
        settings={"trials": 3},
        **kw,
    )


def test_aggregate_case_keeps_both_timers_per_trial():
    a = aggregate_case(
        0, "c", [_trial(100.0, 90.0), _trial(110.0, None, kernelTimeNote="kernel time unavailable: x"), _trial(1, 2)]
    )
    assert a["trialMediansNs"] == [100.0, 110.0, 1]
    assert a["kernelTrialMediansNs"] == [90.0, None, 2]
    assert a["kernelActivitiesPerCall"] == 3 and a["kernelActivityKinds"] == {"kernel": 3}
    assert a["kernelTimeNote"] == "kernel time unavailable: x"


def test_bundle_makes_kernel_time_primary_and_shows_both_timers():
    b = _bundle(_cases())
    assert verify_bundle(b) == []
    json.dumps(b, allow_nan=False)
    s = b["run"]["spec"]
    timing = s["timing"]
    assert timing["primaryTimer"] == KERNEL_TIME == "kernelTime"
    kernel_cases = [91.0, 305.0]  # per case: median over trials
    event_cases = [105.0, 400.0]
    assert timing["latencyNs"]["median"] == pytest.approx(geomean(kernel_cases), abs=1e-3)
    assert timing["timers"][KERNEL_TIME]["latencyNs"]["median"] == timing["latencyNs"]["median"]
    assert timing["timers"][EVENT_TIME]["latencyNs"]["median"] == pytest.approx(geomean(event_cases), abs=1e-3)
    assert timing["timers"][KERNEL_TIME]["timer"] == "kernel_time"
    assert timing["timers"][EVENT_TIME]["timer"] == "cuda_graph_or_events"
    k_trials = [geomean([90.0, 300.0]), geomean([91.0, 310.0]), geomean([92.0, 305.0])]
    e_trials = [geomean([100.0, 400.0]), geomean([110.0, 380.0]), geomean([105.0, 420.0])]
    assert [t["latencyNs"] for t in timing["trials"]] == pytest.approx(k_trials, abs=1e-3)
    assert [t["kernelTimeNs"] for t in timing["trials"]] == pytest.approx(k_trials, abs=1e-3)
    assert [t["eventTimeNs"] for t in timing["trials"]] == pytest.approx(e_trials, abs=1e-3)
    assert timing["spread"]["maxOverMin"] == pytest.approx(max(k_trials) / min(k_trials), abs=1e-6)
    assert timing["timers"][EVENT_TIME]["spread"]["maxOverMin"] == pytest.approx(
        max(e_trials) / min(e_trials), abs=1e-6
    )
    # per case: latencyNs / timer / trialMediansNs are the primary's; both timers under timers
    a, bcase = s["cases"]
    assert a["latencyNs"] == {"median": 91.0} and a["timer"] == "kernel_time"
    assert a["trialMediansNs"] == [90.0, 91.0, 92.0]
    assert a["timers"][KERNEL_TIME]["activitiesPerCall"] == 3
    assert a["timers"][EVENT_TIME] == {
        "timer": "cuda_graph",
        "latencyNs": {"median": 105.0},
        "trialMediansNs": [100.0, 110.0, 105.0],
    }
    assert bcase["timers"][EVENT_TIME]["timer"] == "cuda_events"
    metrics = s["sourceNative"]["metrics"]
    assert metrics["latency_ms"] == metrics["kernel_time_ms"] == pytest.approx(geomean(kernel_cases) / 1e6, abs=1e-9)
    assert metrics["event_time_ms"] == pytest.approx(geomean(event_cases) / 1e6, abs=1e-9)


def test_protocol_names_the_primary_timer_and_describes_both():
    m = protocol_document({"trials": 3})["spec"]["measurement"]
    assert m["timer"] == "kernel_time" and m["primaryTimer"] == KERNEL_TIME
    assert set(m["timers"]) == {KERNEL_TIME, EVENT_TIME}
    assert "device_time_total" in m["timers"][KERNEL_TIME]  # says what it does not use
    assert "never counted" in m["timers"][KERNEL_TIME]
    off = protocol_document({"trials": 3, "kernelTimer": False})["spec"]["measurement"]
    assert off["timer"] == "cuda_graph_or_events" and off["primaryTimer"] == EVENT_TIME
    assert set(off["timers"]) == {EVENT_TIME}


def test_a_case_without_kernel_time_makes_event_time_primary_for_the_whole_run():
    b = _bundle(_cases(kernel_b=(300.0, None, 305.0)))
    s = b["run"]["spec"]
    assert s["status"] == "passed" and s["timing"]["primaryTimer"] == EVENT_TIME
    assert set(s["timing"]["timers"]) == {EVENT_TIME}
    assert s["timing"]["latencyNs"]["median"] == pytest.approx(geomean([105.0, 400.0]), abs=1e-3)
    assert [c["timer"] for c in s["cases"]] == ["cuda_graph", "cuda_events"]
    assert "kernel_time_ms" not in s["sourceNative"]["metrics"]
    assert verify_bundle(b) == []


def test_failed_run_has_no_latency_for_either_timer():
    cases = _cases()
    cases[1] = aggregate_case(1, "case-b", [{"status": st.RUNTIME_ERROR, "detail": "boom"}] * 3)
    s = _bundle(cases)["run"]["spec"]
    assert s["status"] == "failed" and s["statusDetail"] == st.RUNTIME_ERROR
    assert s["timing"]["latencyNs"] == {} and s["timing"]["timers"] == {}
    assert s["cases"][1]["latencyNs"] == {} and s["cases"][1]["detail"] == "boom"
    assert "latency_ms" not in s["sourceNative"]["metrics"]


# ------------------------------------------------------------------ the committed bundles


def test_issue14_bundles_exist():
    assert len(ISSUE14_BUNDLES) >= 13


@pytest.mark.parametrize("path", ISSUE14_BUNDLES, ids=lambda p: p.name)
def test_issue14_bundle_figures_follow_from_its_cases(path):
    b = json.loads(path.read_text())
    assert verify_bundle(b) == []
    assert b["protocol"]["spec"]["harness"]["version"] == "0.2.0"
    assert b["environment"]["spec"]["hardware"]["product"] == "NVIDIA H200"
    s = b["run"]["spec"]
    if s["status"] != "passed":
        assert s["timing"]["latencyNs"] == {}
        return
    timing = s["timing"]
    assert timing["primaryTimer"] == KERNEL_TIME and len(timing["trials"]) == 3
    for name in (KERNEL_TIME, EVENT_TIME):
        per_case = [c["timers"][name]["latencyNs"]["median"] for c in s["cases"]]
        assert timing["timers"][name]["latencyNs"]["median"] == pytest.approx(geomean(per_case), rel=1e-6)
        for t in range(3):
            trial = geomean([c["timers"][name]["trialMediansNs"][t] for c in s["cases"]])
            assert timing["trials"][t][f"{name}Ns"] == pytest.approx(trial, rel=1e-6)
    for c in s["cases"]:
        assert c["latencyNs"] == c["timers"][KERNEL_TIME]["latencyNs"] and c["timer"] == "kernel_time"
        assert c["timers"][EVENT_TIME]["timer"] in ("cuda_graph", "cuda_events")
        assert c["timers"][KERNEL_TIME]["activitiesPerCall"] >= 1
    assert math.isclose(s["sourceNative"]["metrics"]["latency_ms"] * 1e6, timing["latencyNs"]["median"], rel_tol=1e-6)


def test_kernel_time_is_below_graph_replay_time_on_the_regression_bundles():
    """The check DESIGN section 6 asks for, on graph-capturable implementations: kernel time
    <= graph-replay time on every case, by a few microseconds (measured 2026-12-01)."""
    for name in ("L1-010-reference-H200-20261201.json", "L1-062-torch-compile-eager-numerics-H200-20261201.json"):
        s = json.loads((RERUNS / name).read_text())["run"]["spec"]
        for c in s["cases"]:
            assert c["timers"][EVENT_TIME]["timer"] == "cuda_graph"
            diff = c["timers"][EVENT_TIME]["latencyNs"]["median"] - c["timers"][KERNEL_TIME]["latencyNs"]["median"]
            assert 0 < diff < 10_000, (name, c["index"], diff)
