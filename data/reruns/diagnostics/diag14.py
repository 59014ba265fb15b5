# Diagnostic (issue 14): why kernel time > graph time on large cases. For a few cases, in one
# process and order A/B/C/D/A: (A) CUDA-event time of a graph replay, (B) kernel time of the
# graph replay, (C) kernel time of the direct call, (D) CUDA-event time of the direct call.
import json, statistics, sys, torch
from pathlib import Path
from torch.profiler import ProfilerActivity, profile, record_function
from reruns.harness.definition import load_definition, load_workload
from reruns.harness.worker import generate_inputs, load_sources, L2Flusher, steady_clocks
from reruns.harness.kerneltime import MARKER, activities_per_call
from reruns.harness.gpu import GpuProbe
dev = torch.device("cuda", 0); probe = GpuProbe(0, None)
fl = L2Flusher(torch, dev, 256 << 20); steady_clocks(torch, dev, 3.0, fl)
for spec in sys.argv[1:]:
    path, idx = spec.rsplit(":", 1); d = load_definition(path); case = load_workload(path)[int(idx)]
    ref = load_sources([{"path": "reference.py", "content": d.reference}], "reference.py", "r" + idx + path[-6:].replace("/", "_"), Path("/tmp/diag"))
    args = generate_inputs(torch, d, case, d.resolve_axes(case.axes), ref, dev, 1234)
    base = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    def restore():
        for w, b in zip(args, base):
            if isinstance(w, torch.Tensor): w.copy_(b)
    with torch.no_grad():
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3): ref.run(*args)
        torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g): ref.run(*args)
        def ev(fn, n=40):
            t = []
            for _ in range(n):
                torch.cuda.synchronize(); restore(); fl.flush(); torch.cuda._sleep(2000000)
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(); fn(); b.record(); torch.cuda.synchronize(); t.append(a.elapsed_time(b) * 1e3)
            return statistics.median(t[10:])
        def kt(fn, n=40, shield=0):
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                for _ in range(n):
                    torch.cuda.synchronize(); restore(); fl.flush(); torch.cuda.synchronize()
                    if shield: torch.cuda._sleep(shield)
                    with record_function(MARKER): fn()
                torch.cuda.synchronize()
            p.export_chrome_trace("/tmp/d.json"); sm = activities_per_call(json.load(open("/tmp/d.json")))
            return statistics.median(c.ns / 1e3 for c in sm.calls[10:]), sm.calls[-1].count
        out = {"A_graph_events": ev(g.replay), "clk": probe.clocks().get("smMHz") if probe.clocks() else None}
        out["B_graph_kernel"] = kt(g.replay); out["C_direct_kernel"] = kt(lambda: ref.run(*args))
        out["E_direct_kernel_shield"] = kt(lambda: ref.run(*args), shield=2000000)
        out["F_direct_kernel_again"] = kt(lambda: ref.run(*args))
        out["D_direct_events"] = ev(lambda: ref.run(*args)); out["A2_graph_events"] = ev(g.replay)
        out["clk2"] = probe.clocks().get("smMHz") if probe.clocks() else None
    print(spec.split("/")[-1], json.dumps(out), flush=True)
