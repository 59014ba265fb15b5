# Diagnostic 2 (issue 14): per call, the sum of activity durations vs the union of their
# intervals vs the span first-start..last-end, from the same CUPTI trace; plus CUDA-event
# time of the direct call and of a graph replay.
import bisect, json, statistics, sys, torch
from pathlib import Path
from torch.profiler import ProfilerActivity, profile, record_function
from reruns.harness.definition import load_definition, load_workload
from reruns.harness.worker import generate_inputs, load_sources, L2Flusher, steady_clocks
dev = torch.device("cuda", 0); fl = L2Flusher(torch, dev, 256 << 20); steady_clocks(torch, dev, 3.0, fl)
for spec in sys.argv[1:]:
    path, idx = spec.rsplit(":", 1); d = load_definition(path); case = load_workload(path)[int(idx)]
    ref = load_sources([{"path": "reference.py", "content": d.reference}], "reference.py", "q" + idx + path[-6:].replace("/", "_"), Path("/tmp/diag"))
    args = generate_inputs(torch, d, case, d.resolve_axes(case.axes), ref, dev, 1234)
    base = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    def restore():
        for w, b in zip(args, base):
            if isinstance(w, torch.Tensor): w.copy_(b)
    with torch.no_grad():
        for _ in range(3): ref.run(*args)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(40):
                torch.cuda.synchronize(); restore(); fl.flush(); torch.cuda.synchronize()
                with record_function("kernelindex_call"): ref.run(*args)
            torch.cuda.synchronize()
        p.export_chrome_trace("/tmp/d.json"); ev = json.load(open("/tmp/d.json"))["traceEvents"]
        rng = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "kernelindex_call")
        st = [r[0] for r in rng]; corr = {}
        for e in ev:
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args", {}).get("correlation"):
                i = bisect.bisect_right(st, e["ts"]) - 1
                if i >= 0 and e["ts"] <= rng[i][1]: corr[e["args"]["correlation"]] = i
        calls = [[] for _ in rng]
        for e in ev:
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("args", {}).get("correlation") in corr:
                calls[corr[e["args"]["correlation"]]].append((e["ts"], e["ts"] + e["dur"], e["name"][:50]))
        sums, unions, spans = [], [], []
        for c in calls[10:]:
            c.sort(); sums.append(sum(b - a for a, b, _ in c)); spans.append(c[-1][1] - c[0][0])
            u, cur = 0.0, None
            for a, b, _ in c:
                if cur is None or a > cur[1]:
                    if cur: u += cur[1] - cur[0]
                    cur = [a, b]
                else: cur[1] = max(cur[1], b)
            unions.append(u + cur[1] - cur[0])
        gaps = [round(calls[-1][i + 1][0] - calls[-1][i][1], 3) for i in range(len(calls[-1]) - 1)]
        print(spec.split("/")[-1], json.dumps({"sum": statistics.median(sums), "union": statistics.median(unions), "span": statistics.median(spans), "gaps_last_call_us": gaps[:12], "durs_last_call_us": [round(b - a, 1) for a, b, _ in calls[-1]][:12]}), flush=True)
