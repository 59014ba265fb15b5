# Smoke test of the kernel-time attribution on the device: which trace categories exist,
# and does every GPU activity map to a launch record (Triton via cuLaunchKernel included)?
import collections, json, torch
from torch.profiler import ProfilerActivity, profile, record_function
from reruns.harness.kerneltime import activities_per_call, kernel_time_result
print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())
x = torch.randn(4096, 4096, device="cuda"); buf = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
f = torch.compile(lambda a: (a * 2).sin() + 1)
f(x); torch.cuda.synchronize()
def call():
    y = x @ x; z = f(y); s = torch.tensor(3.0).cuda(); return z + s
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(5):
        torch.cuda.synchronize(); buf.zero_(); torch.cuda.synchronize()
        with record_function("kernelindex_call"):
            call()
    torch.cuda.synchronize()
prof.export_chrome_trace("/tmp/t.json"); tr = json.load(open("/tmp/t.json"))
cats = collections.Counter(e.get("cat") for e in tr["traceEvents"]); print(dict(cats))
for e in tr["traceEvents"]:
    if e.get("cat") in ("kernel", "gpu_memcpy", "cuda_driver", "cuda_runtime") and e.get("name", "").startswith(("triton", "cuLaunch", "cudaLaunchKernel", "Memcpy")):
        print("sample", e.get("cat"), e.get("name")[:60], e.get("args", {}).get("correlation")); 
s = activities_per_call(tr); print("unattributed", s.unattributed, "orphans", s.orphans)
print([(round(c.ns), c.count, c.by_category) for c in s.calls])
print(kernel_time_result(s, 1, 4))
