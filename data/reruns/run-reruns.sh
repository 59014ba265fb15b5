#!/usr/bin/env bash
# Reruns of issue 6, as run on the device machine (one NVIDIA H200) from the repo root:
#   OUT=/some/dir bash data/reruns/run-reruns.sh [NAME ...]
# NAME is one of the bundles below (default: all). rfc8785 travels as a wheel in .whl/.
set -u
OUT=${OUT:-data/reruns}
mkdir -p "$OUT" /tmp/ki-logs
if ! python3 -c 'import rfc8785' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
D=data/sol-execbench/definitions/L1
K10=$D/010_attention_value_projection_with_transpose
K62=$D/062_kv_cache_update_with_rope_backward
declare -A DEF SOL
DEF[L1-062-reference-H200]=$K62;        SOL[L1-062-reference-H200]=reference
DEF[L1-010-reference-H200]=$K10;        SOL[L1-010-reference-H200]=reference
DEF[L1-010-scoring-baseline-H200]=$K10; SOL[L1-010-scoring-baseline-H200]=baseline:data/sol-execbench/kernels/kernel-10.json
DEF[L1-010-torch-compile-H200]=$K10;    SOL[L1-010-torch-compile-H200]=torch-compile
DEF[L1-062-torch-compile-H200]=$K62;    SOL[L1-062-torch-compile-H200]=torch-compile
DEF[L1-062-torch-compile-eager-numerics-H200]=$K62; SOL[L1-062-torch-compile-eager-numerics-H200]=torch-compile-eager-numerics
NAMES=("$@")
[ ${#NAMES[@]} -eq 0 ] && NAMES=(L1-062-reference-H200 L1-010-reference-H200 L1-010-scoring-baseline-H200
                                  L1-010-torch-compile-H200 L1-062-torch-compile-H200
                                  L1-062-torch-compile-eager-numerics-H200)
# Priming (discarded): on a freshly started machine the first process measured some cases
# of 062 up to 2x slower than every later process; one throwaway trial absorbs that.
echo "=== priming (discarded) $(date -u +%FT%TZ)"
python3 -m reruns.harness --definition "$K62" --solution reference --out /tmp/ki-priming.json \
  --trials 1 --warmup-seconds 3 --iterations 50 --workdir /tmp/ki-work/priming 2> /tmp/ki-logs/priming.log
tail -n 1 /tmp/ki-logs/priming.log
for name in "${NAMES[@]}"; do
  echo "=== $name $(date -u +%FT%TZ)"
  python3 -m reruns.harness --definition "${DEF[$name]}" --solution "${SOL[$name]}" \
    --out "$OUT/$name.json" --trials 3 --warmup-seconds 3 --iterations 50 \
    --workdir "/tmp/ki-work/$name" 2> "/tmp/ki-logs/$name.log"
  echo "rc=$? $(date -u +%FT%TZ)"
  tail -n 3 "/tmp/ki-logs/$name.log"
done
