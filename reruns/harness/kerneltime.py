"""Kernel time from a profiler trace (pure Python, no torch).

Kernel time of one call = the summed durations of every GPU activity the call launched
(kernels, memcpys, memsets), as CUPTI recorded them and torch.profiler/Kineto exported them
(`prof.export_chrome_trace`). The worker wraps each call, and nothing else, in
`record_function(MARKER)`; an activity belongs to a call when the CPU-side API call that
launched it (a `cuda_runtime` / `cuda_driver` event: cudaLaunchKernel, cuLaunchKernel,
cudaMemcpyAsync, cudaGraphLaunch...) started inside the call's host range. The two are joined
by CUPTI's correlation id. The L2 flush and the input restore are launched outside that
range, so their activities are never counted.

What is deliberately NOT used (DESIGN §6): the `device_time_total` of the record_function
range, and `gpu_user_annotation` events (the GPU-side span of the range). Neither is the sum
of the activities: on 062 they gave 0.20-0.44 ms where the activities take ~25 us.
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass, field
from typing import Any

MARKER = "kernelindex_call"
GPU_ACTIVITY_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
# Host-side events that carry a CUPTI correlation id to the activities they launched.
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


@dataclass
class CallActivity:
    """GPU activities attributed to one call (one marker range)."""

    ns: float = 0.0  # summed durations
    count: int = 0
    by_category: dict[str, int] = field(default_factory=dict)


@dataclass
class TraceSummary:
    calls: list[CallActivity]
    unattributed: int  # GPU activities launched outside every call range (flush, restore, ...)
    orphans: int  # GPU activities whose launching API call is not in the trace


def _events(trace: Any) -> list[dict]:
    if isinstance(trace, dict):
        trace = trace.get("traceEvents", [])
    return [e for e in trace if isinstance(e, dict) and e.get("ph", "X") == "X"]


def _correlation(event: dict) -> int | None:
    args = event.get("args")
    if not isinstance(args, dict):
        return None
    value = args.get("correlation")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def activities_per_call(trace: Any, marker: str = MARKER) -> TraceSummary:
    """Per marker range (in time order), the GPU activities the range launched."""
    events = _events(trace)
    ranges = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0)))
        for e in events
        if e.get("cat") == "user_annotation" and e.get("name") == marker
    )
    starts = [r[0] for r in ranges]
    launch_call: dict[int, int | None] = {}  # correlation -> call index (None: outside every call)
    for e in events:
        if e.get("cat") not in LAUNCH_CATEGORIES:
            continue
        corr = _correlation(e)
        if corr is None or corr == 0:
            continue
        ts = float(e["ts"])
        i = bisect.bisect_right(starts, ts) - 1
        launch_call[corr] = i if i >= 0 and ts <= ranges[i][1] else None
    calls = [CallActivity() for _ in ranges]
    unattributed = orphans = 0
    for e in events:
        cat = e.get("cat")
        if cat not in GPU_ACTIVITY_CATEGORIES:
            continue
        corr = _correlation(e)
        if corr not in launch_call:
            orphans += 1
            continue
        i = launch_call[corr]
        if i is None:
            unattributed += 1
            continue
        call = calls[i]
        call.ns += float(e.get("dur", 0.0)) * 1e3  # trace durations are in microseconds
        call.count += 1
        call.by_category[cat] = call.by_category.get(cat, 0) + 1
    return TraceSummary(calls=calls, unattributed=unattributed, orphans=orphans)


def kernel_time_result(summary: TraceSummary, warmup: int, iterations: int) -> dict:
    """The worker's per-case kernel-time fields from a trace of warmup + iterations calls.

    Raises ValueError when the trace cannot give a kernel time for every timed call (wrong
    number of ranges, a call without any GPU activity, activities whose launch is missing).
    """
    if len(summary.calls) != warmup + iterations:
        raise ValueError(f"trace has {len(summary.calls)} call ranges, expected {warmup + iterations}")
    timed = summary.calls[warmup:]
    empty = sum(1 for c in timed if c.count == 0)
    if empty:
        raise ValueError(f"{empty} of {len(timed)} timed calls launched no GPU activity")
    if summary.orphans:
        raise ValueError(f"{summary.orphans} GPU activities have no launch record in the trace")
    values = [c.ns for c in timed]
    counts = [c.count for c in timed]
    categories: dict[str, int] = {}
    for c in timed:
        for k, v in c.by_category.items():
            categories[k] = max(categories.get(k, 0), v)
    return {
        "kernelMedianNs": statistics.median(values),
        "kernelMinNs": min(values),
        "kernelMaxNs": max(values),
        "kernelActivitiesPerCall": statistics.median(counts),
        "kernelActivityKinds": dict(sorted(categories.items())),
    }
