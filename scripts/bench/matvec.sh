#!/usr/bin/env bash
# Coded mat-vec (configs/bench/matvec.toml): HCMM against uniform uncoded, load-balanced
# uncoded and uniform coded through the engine, with the same injected heterogeneous delays,
# beside the simulator (trial 0 = the engine's delays; 200 trials) and the plan's expected
# time; then the master's decode time versus r (outrun bench rows). Prints a Markdown report.
#   scripts/bench/matvec.sh [OUT_DIR]
set -euo pipefail
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$here"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="${1:-runs/bench-matvec-$(date -u +%Y%m%d-%H%M%S)}"
cfg=configs/bench/matvec.toml
mkdir -p "$out"
: > "$out/sim.txt"
for kind in uniform-uncoded lb-uncoded uniform-coded hcmm hcmm-gaussian hcmm-lt; do
  args=(--set "run.name=$kind")
  case "$kind" in
    uniform-uncoded|lb-uncoded) args+=(--set "scheme.kind=$kind" --set scheme.code=) ;;
    uniform-coded|hcmm) args+=(--set "scheme.kind=$kind") ;;
    hcmm-gaussian) args+=(--set scheme.kind=hcmm --set scheme.code=gaussian) ;;
    hcmm-lt) args+=(--set scheme.kind=hcmm --set scheme.code=lt --set scheme.overhead=0.3) ;;
  esac
  echo "bench-matvec: $kind" >&2
  launch/local.sh "$cfg" "${args[@]}" --set "run.out_dir=$out/engine" >/dev/null
  "$bin" simulate "$cfg" "${args[@]}" --trials 1 --set "run.out_dir=$out/sim" >/dev/null
  echo "$kind $("$bin" simulate "$cfg" "${args[@]}" --trials 200 --set "run.out_dir=$out/sim200" | grep -o 'mean [0-9.]* ms' | head -1)" >> "$out/sim.txt"
done
"$bin" bench rows --sizes 250,500,1000,2000 --lt-sizes 2000,10000,50000 --sets 5 > "$out/rows.csv"
python3 scripts/bench/matvec.py "$out"
