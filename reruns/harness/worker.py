"""One trial process: `python -m reruns.harness.worker --config FILE`.

Runs the given cases one after another and reports each on a private channel (the
process's original stdout; anything the implementation prints goes to stderr):
  {"type": "hello", "environment", "clocks"}      after clock warm-up
  {"type": "case_start", "index"}                 before a case (the parent's watchdog
                                                  starts the case's time limit here)
  {"type": "case", "index", "status", ...}        a finished case
  {"type": "retry", "index"}                      a case failed after an earlier failed graph
                                                  capture in this process: the parent runs it
                                                  again (once) in a fresh process
  {"type": "graph_poisoned", "index"}             graph capture broke the CUDA context;
                                                  the parent restarts at this case without
                                                  graphs
  {"type": "fatal", "status", "detail"}           nothing can run (reference or solution
                                                  cannot be loaded)
  {"type": "done", "clocks"}
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from . import status as st
from .definition import Case, Definition, load_definition, load_workload
from .implementation import Implementation, ImplementationError, resolve_implementation

EXIT_RESTART = 4


class GraphPoisoned(Exception):
    pass


def _channel():
    fd = os.dup(1)
    os.dup2(2, 1)  # the implementation's prints go to stderr
    stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(msg: dict) -> None:
        stream.write(json.dumps(msg, allow_nan=False) + "\n")
        stream.flush()

    return send


def _tail(text: str, limit: int = 1500) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def _exc_detail(exc: BaseException) -> str:
    return _tail("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def load_sources(sources: list[dict], entry_file: str, tag: str, workdir: Path):
    folder = workdir / tag
    folder.mkdir(parents=True, exist_ok=True)
    for src in sources:
        path = folder / src["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src["content"], encoding="utf-8")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    module_name = f"_kernelindex_{tag}_" + Path(entry_file).with_suffix("").as_posix().replace("/", "_")
    spec = importlib.util.spec_from_file_location(module_name, folder / entry_file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- inputs (as SOL-ExecBench)


def torch_dtype(torch, name: str):
    table = {
        "float64": torch.float64,
        "float32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "int64": torch.int64,
        "int32": torch.int32,
        "int16": torch.int16,
        "int8": torch.int8,
        "bool": torch.bool,
    }
    for extra in ("float8_e4m3fn", "float8_e5m2"):
        if hasattr(torch, extra):
            table[extra] = getattr(torch, extra)
    if name not in table:
        raise ValueError(f"unsupported dtype {name!r}")
    return table[name]


def rand_tensor(torch, shape, dtype, device):
    if dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None)):
        return torch.randn(shape, dtype=torch.float32, device=device).clamp_(-2.0, 2.0).to(dtype)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    ranges = {
        torch.int8: (-128, 128),
        torch.int16: (-1024, 1024),
        torch.int32: (-1024, 1024),
        torch.int64: (-1024, 1024),
    }
    if dtype in ranges:
        low, high = ranges[dtype]
        return torch.randint(low, high, shape, dtype=dtype, device=device)
    raise ValueError(f"unsupported random dtype {dtype}")


def generate_inputs(
    torch, definition: Definition, case: Case, resolved: dict, ref_module, device, seed: int
) -> list[Any]:
    torch.manual_seed(seed + case.index)
    kinds = {spec.get("type") for spec in case.inputs.values()}
    shapes = definition.input_shapes(resolved)
    if "custom" in kinds:
        entry = definition.custom_inputs_entrypoint
        if not entry:
            raise ValueError("custom inputs without custom_inputs_entrypoint")
        produced = getattr(ref_module, entry)({**resolved, **case.scalar_inputs()}, device)
        if not isinstance(produced, dict):
            raise ValueError(f"{entry} returned {type(produced).__name__}, not a dict")
        values = []
        for name in definition.inputs:
            if name not in produced:
                raise ValueError(f"{entry} did not produce input {name!r}")
            value = produced[name]
            if shapes[name] is not None and tuple(value.shape) != tuple(shapes[name]):
                raise ValueError(f"{entry}: {name} has shape {tuple(value.shape)}, expected {shapes[name]}")
            values.append(value)
        return values
    values = []
    for name, spec in definition.inputs.items():
        wl = case.inputs.get(name)
        if wl is None:
            continue  # as SOL-ExecBench: inputs the workload does not name are not passed
        kind = wl.get("type")
        if kind == "scalar":
            values.append(wl["value"])
        elif kind == "random":
            dtype = torch_dtype(torch, spec["dtype"])
            if shapes[name] is None:
                values.append(rand_tensor(torch, (), dtype, device).item())
            else:
                values.append(rand_tensor(torch, shapes[name], dtype, device))
        elif kind == "safetensors":
            import safetensors.torch as stt

            path = Path(wl["path"])
            if not path.is_absolute():
                path = definition.path / path
            values.append(stt.load_file(str(path))[wl["tensor_key"]].to(device))
        else:
            raise ValueError(f"unsupported input type {kind!r} for {name}")
    return values


def allocate_outputs(torch, definition: Definition, resolved: dict, device) -> list[Any]:
    outs = []
    for name, spec in definition.outputs.items():
        shape = definition.output_shapes(resolved)[name]
        outs.append(torch.empty(() if shape is None else shape, dtype=torch_dtype(torch, spec["dtype"]), device=device))
    return outs


# ---------------------------------------------------------------- timing


class L2Flusher:
    def __init__(self, torch, device, nbytes: int):
        self.buffer = torch.empty(nbytes // 4, dtype=torch.int32, device=device)
        self.nbytes = nbytes

    def flush(self) -> None:
        self.buffer.zero_()


def steady_clocks(torch, device, seconds: float, flusher=None) -> float:
    """Busy GPU work for `seconds` so clocks leave their idle state (read, never set).

    The work is memory-bound (rewriting the L2-flush buffer), like most kernels timed here:
    tensor-core work would run into the power limit and leave the clocks throttled.
    """
    if seconds <= 0 or device.type != "cuda":
        return 0.0
    buf = flusher.buffer if flusher is not None else torch.empty(64 * 1024 * 1024, dtype=torch.int32, device=device)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            buf.add_(1)
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def healthy(torch, device) -> bool:
    """Can this process still run CUDA work (after a failed graph capture, say)?
    Exercises a kernel, the random generator (left in capture state by some failures), a
    matmul and a device-to-host copy."""
    try:
        x = torch.ones(4, device=device)
        x.add_(1)
        r = torch.randn(4, 4, device=device)
        y = r @ r
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return float(x.sum().item()) == 8.0 and bool(torch.isfinite(y).all().item())
    except Exception:
        return False


def _sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class CaseRunner:
    def __init__(
        self,
        torch,
        cfg: dict,
        definition: Definition,
        impl: Implementation,
        ref_run,
        impl_run,
        ref_module,
        device,
        flusher,
    ):
        self.torch = torch
        self.cfg = cfg
        self.definition = definition
        self.impl = impl
        self.ref_run = ref_run
        self.impl_run = impl_run
        self.ref_module = ref_module
        self.device = device
        self.flusher = flusher
        self.output_names = list(definition.outputs)
        self.capture_failed = False  # a graph capture failed earlier in this process

    def _clone(self, values):
        t = self.torch
        return [v.clone() if isinstance(v, t.Tensor) else v for v in values]

    def run(self, case: Case, allow_graph: bool) -> dict:
        from .correctness import CheckResult, compare_outputs, normalize_outputs

        torch, device = self.torch, self.device
        result: dict[str, Any] = {"type": "case", "index": case.index, "id": case.uuid}
        tol = case.effective_tolerance
        # Reference outputs on the case's seeded inputs.
        try:
            resolved = self.definition.resolve_axes(case.axes)
            inputs = generate_inputs(
                torch, self.definition, case, resolved, self.ref_module, device, int(self.cfg["seed"])
            )
            with torch.no_grad():
                ref_raw = self.ref_run(*self._clone(inputs))
            _sync(torch, device)
            refs = normalize_outputs(ref_raw, self.output_names)
        except Exception as exc:
            return {**result, "status": st.INVALID_REFERENCE, "detail": _exc_detail(exc)}

        dps = self.impl.destination_passing_style
        n_inputs = len(inputs)

        def make_args():
            args = self._clone(inputs)
            if dps:
                args += allocate_outputs(torch, self.definition, resolved, device)
            return args

        def invoke(args):
            out = self.impl_run(*args)
            return list(args[n_inputs:]) if dps else out

        def check(out) -> CheckResult:
            return compare_outputs(out, refs, tol, self.output_names)

        # Correctness (this first call is also the first warm-up / compile).
        try:
            args = make_args()
            with torch.no_grad():
                out = invoke(args)
            _sync(torch, device)
        except Exception as exc:
            return {**result, "status": st.RUNTIME_ERROR, "detail": _exc_detail(exc)}
        try:
            res = check(out)
        except Exception as exc:
            return {**result, "status": st.RUNTIME_ERROR, "detail": _exc_detail(exc)}
        result["correctness"] = res.to_correctness()
        if res.status != st.PASSED:
            return {**result, "status": res.status, "detail": res.detail}
        del out, args

        try:
            with torch.no_grad():
                timing = self.measure(make_args, invoke, check, allow_graph)
        except GraphPoisoned:
            raise
        except Exception as exc:
            return {**result, "status": st.RUNTIME_ERROR, "detail": _exc_detail(exc)}
        return {**result, "status": st.PASSED, **timing}

    def measure(self, make_args, invoke, check, allow_graph: bool) -> dict:
        torch, device, cfg = self.torch, self.device, self.cfg
        iterations = int(cfg["iterations"])
        warm = int(cfg["warmupIterations"])
        base = make_args()
        work = self._clone(base)
        pairs = [(w, b) for w, b in zip(work, base, strict=True) if isinstance(w, torch.Tensor)]

        def restore():
            for w, b in pairs:
                w.copy_(b)

        if device.type != "cuda":
            times = []
            for _ in range(warm + iterations):
                restore()
                t0 = time.perf_counter()
                invoke(work)
                times.append((time.perf_counter() - t0) * 1e3)
            return {"timer": "host_perf_counter", "medianNs": statistics.median(times[warm:]) * 1e6}

        note = None
        graph = None
        if allow_graph:
            try:
                graph, note = self._capture(invoke, work, restore, check)
            except Exception as exc:
                note = f"graph capture failed: {type(exc).__name__}: {str(exc)[:300]}"
                graph = None
                self.capture_failed = True
                try:
                    _sync(torch, device)
                except Exception:
                    pass
                if not healthy(torch, device):
                    raise GraphPoisoned(note) from exc
        else:
            note = "graph capture skipped"

        if graph is not None:

            def call():
                graph.replay()

            timer = "cuda_graph"
        else:

            def call():
                invoke(work)

            timer = "cuda_events"

        # Host enqueue time of one call, to size the launch shield.
        restore()
        _sync(torch, device)
        t0 = time.perf_counter()
        call()
        host_us = (time.perf_counter() - t0) * 1e6
        _sync(torch, device)
        shield = 0
        if cfg.get("launchShield", True) and hasattr(torch.cuda, "_sleep"):
            # at least 0.5 ms, 3x the host enqueue time of one call (cycles at <= 2 GHz)
            shield = int(min(max(3.0 * host_us + 100.0, 500.0), 20000.0) * 2000)

        total = warm + iterations
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        for i in range(total):
            _sync(torch, device)
            restore()
            self.flusher.flush()
            if shield:
                torch.cuda._sleep(shield)
            starts[i].record()
            call()
            ends[i].record()
        _sync(torch, device)
        times_ms = [s.elapsed_time(e) for s, e in zip(starts[warm:], ends[warm:], strict=True)]
        out = {
            "timer": timer,
            "medianNs": statistics.median(times_ms) * 1e6,
            "minNs": min(times_ms) * 1e6,
            "maxNs": max(times_ms) * 1e6,
            "hostEnqueueUs": round(host_us, 1),
            "shieldCycles": shield,
        }
        if note:
            out["timerNote"] = note
        if cfg.get("kernelTimer", True):
            try:
                out.update(self.measure_kernel_time(invoke, work, restore, warm, iterations))
            except Exception as exc:  # the case keeps its event time; the run says why
                out["kernelTimeNote"] = f"kernel time unavailable: {type(exc).__name__}: {str(exc)[:300]}"
        return out

    def measure_kernel_time(self, invoke, work, restore, warm: int, iterations: int) -> dict:
        """Kernel time: per call, the summed durations of the GPU activities it launched.

        One profiler session over warm + iterations direct calls; before each call (and
        outside its record_function range) the inputs are restored and L2 is flushed, both
        synchronised, so neither's activities are attributed to the call. The sum is taken
        from the activity records themselves (kerneltime.py), never from a range's
        device_time_total.
        """
        import tempfile

        from torch.profiler import ProfilerActivity, profile, record_function

        from .kerneltime import MARKER, activities_per_call, kernel_time_result

        torch, device = self.torch, self.device
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(warm + iterations):
                _sync(torch, device)
                restore()
                self.flusher.flush()
                _sync(torch, device)
                with record_function(MARKER):
                    invoke(work)
            _sync(torch, device)
        fd, name = tempfile.mkstemp(suffix=".json", prefix="kerneltime-", dir=self.cfg.get("workdir"))
        os.close(fd)
        try:
            prof.export_chrome_trace(name)
            trace = json.loads(Path(name).read_text(encoding="utf-8"))
        finally:
            try:
                os.unlink(name)
            except OSError:
                pass
        summary = activities_per_call(trace, MARKER)
        result = kernel_time_result(summary, warm, iterations)
        result["kernelTimer"] = "kernel_time"
        return result

    def _capture(self, invoke, work, restore, check):
        torch, device = self.torch, self.device
        side = torch.cuda.Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(2):
                restore()
                invoke(work)
        torch.cuda.current_stream(device).wait_stream(side)
        _sync(torch, device)
        restore()
        _sync(torch, device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = invoke(work)
        restore()
        graph.replay()
        _sync(torch, device)
        res = check(static_out)
        if res.status != st.PASSED:
            return None, f"graph replay did not reproduce the outputs ({res.status}: {res.detail})"
        return graph, None


def _finite(msg: Any) -> Any:
    if isinstance(msg, float):
        return msg if math.isfinite(msg) else None
    if isinstance(msg, dict):
        return {k: _finite(v) for k, v in msg.items()}
    if isinstance(msg, list):
        return [_finite(v) for v in msg]
    return msg


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    cfg = json.loads(Path(args.config).read_text(encoding="utf-8"))
    send = _channel()

    import torch

    from .gpu import GpuProbe, detect_environment

    device = torch.device(cfg.get("device", "cuda"))
    if device.type == "cuda":
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
    probe = None
    if device.type == "cuda":
        bus = None
        try:
            props = torch.cuda.get_device_properties(device)
            bus = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        except Exception:
            bus = None
        probe = GpuProbe(device.index or 0, bus)
    environment = detect_environment(torch, device, probe)

    definition = load_definition(cfg["definition"])
    cases = {c.index: c for c in load_workload(cfg["definition"])}
    workdir = Path(cfg["workdir"])
    workdir.mkdir(parents=True, exist_ok=True)

    nbytes = int(cfg.get("l2FlushBytes", 256 * 1024 * 1024))
    flusher = L2Flusher(torch, device, nbytes) if device.type == "cuda" else None
    warm_s = steady_clocks(torch, device, float(cfg.get("warmupSeconds", 0)), flusher)
    send(
        {
            "type": "hello",
            "pid": os.getpid(),
            "environment": environment,
            "warmupSecondsDone": round(warm_s, 3),
            "clocks": probe.clocks() if probe else None,
        }
    )

    try:
        ref_module = load_sources(
            [{"path": "reference.py", "content": definition.reference}], "reference.py", f"ref{os.getpid()}", workdir
        )
        ref_run = ref_module.run
    except Exception as exc:
        send({"type": "fatal", "status": st.INVALID_REFERENCE, "detail": _exc_detail(exc)})
        return 0
    try:
        impl = resolve_implementation(cfg["solution"], definition)
        if impl.kind in ("reference", "torch-compile"):
            impl_run = ref_run
        else:
            module = load_sources(impl.sources, impl.entry_file, f"impl{os.getpid()}", workdir)
            impl_run = getattr(module, impl.entry_function)
        if impl.compile:
            import torch._dynamo
            import torch._inductor.config as inductor_config

            for key, value in (impl.extra.get("torchCompile", {}).get("inductorConfig") or {}).items():
                setattr(inductor_config, key, value)

            for attr in ("recompile_limit", "cache_size_limit"):
                if hasattr(torch._dynamo.config, attr):
                    setattr(torch._dynamo.config, attr, 64)
            impl_run = torch.compile(impl_run)
    except (ImplementationError, Exception) as exc:
        send({"type": "fatal", "status": st.COMPILE_ERROR, "detail": _exc_detail(exc)})
        return 0

    runner = CaseRunner(torch, cfg, definition, impl, ref_run, impl_run, ref_module, device, flusher)
    no_graph = set(cfg.get("noGraph") or [])
    for index in cfg["cases"]:
        case = cases[index]
        send({"type": "case_start", "index": index})
        try:
            res = runner.run(case, allow_graph=cfg.get("cudaGraph", True) and index not in no_graph)
        except GraphPoisoned as exc:
            send({"type": "graph_poisoned", "index": index, "detail": str(exc)[:500]})
            return EXIT_RESTART
        failed = res["status"] in (st.RUNTIME_ERROR, st.INVALID_REFERENCE)
        if failed and runner.capture_failed and index not in set(cfg.get("retried") or []):
            # possibly collateral damage of an earlier failed capture: run it again in a
            # fresh process (once)
            send({"type": "retry", "index": index, "detail": str(res.get("detail"))[:500]})
            return EXIT_RESTART
        send(_finite(res))
        if failed and not healthy(torch, device):
            return EXIT_RESTART
    send({"type": "done", "clocks": probe.clocks() if probe else None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
