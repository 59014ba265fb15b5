"""CLI: python -m reruns.harness --definition DIR --solution SPEC --out bundle.json"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .manifest import verify_bundle
from .runner import run_rerun


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m reruns.harness",
        description="Re-measure a SOL-ExecBench definition and write a kernelindex.dev/v1alpha1 bundle.",
    )
    p.add_argument("--definition", required=True, help="definition folder (definition.json, workload.jsonl)")
    p.add_argument(
        "--solution", required=True, help="reference | torch-compile | baseline:KERNEL_JSON | solution .json/.py file"
    )
    p.add_argument("--out", required=True, help="bundle JSON to write")
    p.add_argument("--trials", type=int, default=3, help="trials, each in a separate process (>= 3 for publication)")
    p.add_argument(
        "--warmup-seconds", type=float, default=3.0, help="busy GPU work before timing in each trial process"
    )
    p.add_argument("--iterations", type=int, default=50, help="timed iterations per case")
    p.add_argument("--warmup-iterations", type=int, default=10, help="untimed iterations per case before timing")
    p.add_argument("--case-timeout", type=float, default=300.0, help="time limit of one case in seconds")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (development only)")
    p.add_argument("--no-cuda-graph", action="store_true", help="always time with CUDA events")
    p.add_argument("--no-launch-shield", action="store_true")
    p.add_argument("--no-kernel-timer", action="store_true", help="CUDA-event time only (no profiler pass)")
    p.add_argument("--max-cases", type=int, default=None, help="only the first N cases (development)")
    p.add_argument("--workdir", default=None, help="scratch folder (configs, worker logs)")
    a = p.parse_args(argv)
    if a.trials < 1 or a.iterations < 1:
        p.error("--trials and --iterations must be >= 1")

    bundle = run_rerun(
        a.definition,
        a.solution,
        trials=a.trials,
        iterations=a.iterations,
        warmup_iterations=a.warmup_iterations,
        warmup_seconds=a.warmup_seconds,
        case_timeout=a.case_timeout,
        device=a.device,
        seed=a.seed,
        cuda_graph=not a.no_cuda_graph,
        launch_shield=not a.no_launch_shield,
        kernel_timer=not a.no_kernel_timer,
        max_cases=a.max_cases,
        workdir=a.workdir,
    )
    problems = verify_bundle(bundle)
    if problems:
        print("digest problems: " + "; ".join(problems), file=sys.stderr)
        return 2
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(bundle, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    spec = bundle["run"]["spec"]
    timing = spec["timing"]
    trials = ", ".join("n/a" if t.get("latencyNs") is None else f"{t['latencyNs'] / 1e6:.6f}" for t in timing["trials"])
    median = timing["latencyNs"].get("median")
    print(
        json.dumps(
            {
                "out": str(out),
                "status": spec["status"],
                "statusDetail": spec.get("statusDetail"),
                "latency_ms": None if median is None else round(median / 1e6, 6),
                "trials_ms": trials,
                "maxOverMin": timing["spread"]["maxOverMin"],
                "primaryTimer": timing.get("primaryTimer"),
                "timers": sorted({c["timer"] or "-" for c in spec["cases"]}),
                "byTimer": {
                    name: {
                        "latency_ms": round(t["latencyNs"]["median"] / 1e6, 6),
                        "trials_ms": [round(v / 1e6, 6) for v in t["trialLatenciesNs"]],
                        "maxOverMin": t["spread"]["maxOverMin"],
                    }
                    for name, t in (timing.get("timers") or {}).items()
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
