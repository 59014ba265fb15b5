#!/usr/bin/env bash
# Reruns of issue 14 (kernel time + H200 boards), as run on the device machine (one NVIDIA
# H200), from a folder laid out like the repository root (reruns/, data/, .whl/):
#   OUT=/some/dir DEADLINE_S=480 bash data/reruns/run-reruns-14.sh NAME ...
# NAME = <subset>-<number>-<solution>-H200, e.g. L1-062-reference-H200,
# L1-003-scoring-baseline-H200, L2-079-reference-H200, FlashInfer-Bench-009-reference-H200;
# solution = reference | scoring-baseline | torch-compile | torch-compile-eager-numerics.
# Bundles go to $OUT/bundles/NAME.json, harness logs to $OUT/logs/NAME.log, and both into
# $TARBALL (default $OUT/reruns.tar.gz) after every run. No run starts after DEADLINE_S seconds (it is
# reported SKIPPED and left for the next call).
set -u
OUT=${OUT:-data/reruns/out}
TARBALL=${TARBALL:-$OUT/reruns.tar.gz}
mkdir -p "$OUT/bundles" "$OUT/logs"
if ! python3 -c 'import rfc8785' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
# Scoring baselines: the kernel record (/api/kernels/{id} response with data.baseline).
declare -A KERNEL=(
  [L1-010]=data/sol-execbench/kernels/kernel-10.json
  [L1-003]=data/reruns/kernels/kernel-3-score-source.json
  [L1-006]=data/reruns/kernels/kernel-6-score-source.json
)
start=$(date +%s)
for name in "$@"; do
  if [ $(( $(date +%s) - start )) -gt "${DEADLINE_S:-100000}" ]; then
    echo "=== $name SKIPPED (deadline)"; continue
  fi
  [[ ${name%-H200} =~ ^(.+)-([0-9]{3})-(.+)$ ]] || { echo "=== $name: bad name"; continue; }
  subset=${BASH_REMATCH[1]}; num=${BASH_REMATCH[2]}; sol=${BASH_REMATCH[3]}; key=$subset-$num
  def=$(ls -d data/sol-execbench/definitions/"$subset"/"$num"_* 2>/dev/null | head -n 1)
  case $sol in
    scoring-baseline) spec=baseline:${KERNEL[$key]:-missing-kernel-record} ;;
    *) spec=$sol ;;
  esac
  echo "=== $name $(date -u +%FT%TZ) definition=$def solution=$spec"
  python3 -m reruns.harness --definition "$def" --solution "$spec" \
    --out "$OUT/bundles/$name.json" --trials 3 --warmup-seconds 3 --iterations 50 \
    --workdir "/tmp/ki-work/$name" 2> "$OUT/logs/$name.log"
  echo "rc=$? $(date -u +%FT%TZ)"
  tar czf "$TARBALL.tmp" -C "$OUT" bundles logs && mv "$TARBALL.tmp" "$TARBALL"
done
