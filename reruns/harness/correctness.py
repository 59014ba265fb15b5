"""Per-case correctness against the reference ("kernelindex_allclose").

Elementwise rule as SOL-ExecBench's compute_error_stats: an element matches when
|out - ref| <= max_atol + max_rtol * |ref|; the case passes when the matched ratio is at
least required_matched_ratio (and, where published, max |out - ref| <= max_error_cap).
NaN/Inf: an output element that is NaN or +-Inf matches only where the reference holds the
same non-finite value; any other non-finite output element fails the case
(INCORRECT_NUMERICAL) and is flagged in hasNan/hasInf. Errors are reported over the
elements that are finite in both, so the record never carries NaN/Infinity.
Shape and dtype are checked first (INCORRECT_SHAPE, INCORRECT_DTYPE).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from . import status as st

COMPARATOR = "kernelindex_allclose"


class OutputCountError(ValueError):
    pass


@dataclass
class CheckResult:
    status: str
    max_abs: float | None = 0.0
    max_rel: float | None = 0.0
    matched_ratio: float | None = 1.0
    has_nan: bool = False
    has_inf: bool = False
    detail: str | None = None

    def to_correctness(self) -> dict:
        return {
            "maxAbsoluteError": _finite_or_none(self.max_abs),
            "maxRelativeError": _finite_or_none(self.max_rel),
            "matchedRatio": _finite_or_none(self.matched_ratio),
            "hasNan": bool(self.has_nan),
            "hasInf": bool(self.has_inf),
        }


def _finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def normalize_outputs(out: Any, output_names: list[str]) -> list[Any]:
    """Outputs of a value-returning call in definition order (tensor, tuple/list or dict)."""
    if isinstance(out, dict):
        missing = [n for n in output_names if n not in out]
        if missing:
            raise OutputCountError(f"returned dict lacks outputs {missing}")
        return [out[n] for n in output_names]
    if isinstance(out, (tuple, list)):
        if len(out) != len(output_names):
            raise OutputCountError(f"returned {len(out)} values but {len(output_names)} outputs are defined")
        return list(out)
    if len(output_names) != 1:
        raise OutputCountError(f"returned a single value but {len(output_names)} outputs are defined")
    return [out]


def _as_tensor(value: Any, like: torch.Tensor) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    return torch.tensor(value, dtype=like.dtype, device=like.device)


def compare_tensor(out: Any, ref: Any, tol: dict) -> CheckResult:
    ref_t = ref if isinstance(ref, torch.Tensor) else torch.tensor(ref)
    if not isinstance(out, torch.Tensor) and not isinstance(out, (int, float, bool)):
        return CheckResult(st.INCORRECT_SHAPE, None, None, None, detail=f"output is {type(out).__name__}, not a tensor")
    out_t = _as_tensor(out, ref_t)
    if tuple(out_t.shape) != tuple(ref_t.shape):
        return CheckResult(
            st.INCORRECT_SHAPE, None, None, None, detail=f"shape {tuple(out_t.shape)} != {tuple(ref_t.shape)}"
        )
    if out_t.dtype != ref_t.dtype:
        return CheckResult(st.INCORRECT_DTYPE, None, None, None, detail=f"dtype {out_t.dtype} != {ref_t.dtype}")
    total = ref_t.numel()
    if total == 0:
        return CheckResult(st.PASSED)
    atol = float(tol.get("max_atol", 1e-2))
    rtol = float(tol.get("max_rtol", 1e-2))
    required = float(tol.get("required_matched_ratio", 1.0))
    cap = tol.get("max_error_cap")

    wide = torch.float64 if ref_t.dtype == torch.float64 else torch.float32
    x = out_t.detach().to(device=ref_t.device, dtype=wide)
    y = ref_t.detach().to(dtype=wide)
    x_fin = torch.isfinite(x)
    y_fin = torch.isfinite(y)
    has_nan = bool(torch.isnan(x).any().item())
    has_inf = bool(torch.isinf(x).any().item())
    both = x_fin & y_fin
    abs_err = torch.where(both, (x - y).abs(), torch.zeros_like(x))
    allowed = atol + rtol * y.abs()
    ok = both & (abs_err <= allowed)
    same_nonfinite = (~x_fin) & (~y_fin) & ((x == y) | (torch.isnan(x) & torch.isnan(y)))
    ok = ok | same_nonfinite
    matched = float(ok.sum().item()) / float(total)
    max_abs = float(abs_err.max().item())
    rel = abs_err / torch.clamp(y.abs(), min=max(atol, 1e-30))
    rel = torch.where(both, rel, torch.zeros_like(rel))
    max_rel = float(rel.max().item())
    bad_nonfinite = bool(((~x_fin) & ~same_nonfinite).any().item())

    result = CheckResult(st.PASSED, max_abs, max_rel, matched, has_nan, has_inf)
    if bad_nonfinite:
        result.status = st.INCORRECT_NUMERICAL
        result.detail = "output holds NaN/Inf where the reference does not"
    elif matched < required:
        result.status = st.INCORRECT_NUMERICAL
        result.detail = f"matched ratio {matched:.6f} < required {required}"
    elif cap is not None and max_abs > float(cap):
        result.status = st.INCORRECT_NUMERICAL
        result.detail = f"max abs error {max_abs:g} > cap {float(cap):g}"
    return result


def merge(results: list[CheckResult]) -> CheckResult:
    """Combine per-output (or per-trial) results: worst status, max errors, min ratio."""
    if not results:
        return CheckResult(st.PASSED)
    worst = max(results, key=lambda r: st.severity(r.status))
    abs_vals = [r.max_abs for r in results if r.max_abs is not None]
    rel_vals = [r.max_rel for r in results if r.max_rel is not None]
    ratios = [r.matched_ratio for r in results if r.matched_ratio is not None]
    return CheckResult(
        status=worst.status,
        max_abs=max(abs_vals) if abs_vals else None,
        max_rel=max(rel_vals) if rel_vals else None,
        matched_ratio=min(ratios) if ratios else None,
        has_nan=any(r.has_nan for r in results),
        has_inf=any(r.has_inf for r in results),
        detail=worst.detail,
    )


def compare_outputs(outputs: Any, references: list[Any], tol: dict, output_names: list[str]) -> CheckResult:
    """Compare a call's raw return value (or DPS output list) with reference outputs."""
    try:
        outs = normalize_outputs(outputs, output_names)
    except OutputCountError as exc:
        return CheckResult(st.INCORRECT_SHAPE, None, None, None, detail=str(exc))
    results = []
    for name, out, ref in zip(output_names, outs, references, strict=True):
        res = compare_tensor(out, ref, tol)
        if res.detail:
            res.detail = f"{name}: {res.detail}"
        results.append(res)
    return merge(results)
