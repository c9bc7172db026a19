#!/usr/bin/env bash
# CodedReduce vs GC, UMW, ignore-stragglers and RAR on this host, with the same data and the
# same injected shifted-exponential delays (configs/bench/compare.toml). Prints a report.
#   scripts/bench/cr.sh [OUT_DIR] [REPS]
set -euo pipefail
# every MPI job is bounded in time (launch/local.sh, launch/emu-cluster honour it)
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$here"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="${1:-runs/bench-cr-$(date -u +%Y%m%d-%H%M%S)}"
reps="${2:-3}"
cfg=configs/bench/compare.toml
flat=(--set scheme.n= --set scheme.layers= --set scheme.workers=20)
for rep in $(seq "$reps"); do
  for kind in cr gc-cyclic umw ignore rar; do
    case "$kind" in
      cr) args=() ;;
      gc-cyclic|ignore) args=("${flat[@]}" --set scheme.s=5) ;;
      umw|rar) args=("${flat[@]}" --set scheme.s=) ;;
    esac
    echo "bench-cr: rep $rep: $kind" >&2
    launch/local.sh "$cfg" --set "scheme.kind=$kind" --set "run.name=$kind-r$rep" --set "run.out_dir=$out" "${args[@]}" >/dev/null
  done
done
"$bin" report "$out" --target-error 1e-3 --baseline "$(ls -d "$out"/cr-r1-* | head -1)"
