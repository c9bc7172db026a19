#!/usr/bin/env bash
# make reproduce-comm: communication-efficient and adaptive gradient codes on an emulated
# cluster (needs root). Brings up 13 hosts with every link shaped to RATE (default 20mbit), runs
# UMW, GC (cyclic, fractional), CommFR-GC (Gaussian, systematic, LDPC), AGC and G-AGC on 12
# workers with 0, 1 and 2 injected stragglers (workers 5 and 10, 4x slower), REPS times each
# (default 1), tears the cluster down, simulates the same runs (the shaped rate as the network's
# bandwidth), times decoding against group size (outrun bench decode), and writes
# docs/results/comm.md (+ the report in docs/results/comm/).
#   scripts/reproduce-comm.sh [RATE] [REPS]
set -euo pipefail
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-1}"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
cfg=configs/reproduce/comm-emu.toml
out="runs/reproduce-comm-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$(dirname "$out")"   # the link check and drop counts are written beside the run directory
export OUTRUN_EMU_CLUSTER=repro
emu=launch/emu-cluster
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh   # reproduce_burst
[ "$(id -u)" -eq 0 ] || { echo "reproduce-comm: needs root (network namespaces); run it with sudo" >&2; exit 2; }

# label -> the keys of its scheme
schemes=(umw gc-cyclic gc-frac cegc-gaussian cegc-systematic cegc-ldpc agc g-agc)
scheme_args() {
  case "$1" in
    umw) echo "--set scheme.kind=umw" ;;
    gc-cyclic|gc-frac) echo "--set scheme.kind=$1 --set scheme.s=2" ;;
    cegc-ldpc) echo "--set scheme.kind=cegc --set scheme.code=ldpc --set scheme.s=6 --set scheme.m=6" ;;
    cegc-*) echo "--set scheme.kind=cegc --set scheme.code=${1#cegc-} --set scheme.s=2 --set scheme.m=2" ;;
    agc|g-agc) echo "--set scheme.kind=$1 --set scheme.d=3 --set scheme.rounds=6" ;;
  esac
}
straggler_args() {
  case "$1" in
    0) echo "--set stragglers.model=none" ;;
    1) echo "--set stragglers.model=fixed --set stragglers.workers=[5] --set stragglers.factor=4" ;;
    2) echo "--set stragglers.model=fixed --set stragglers.workers=[5,10] --set stragglers.factor=4" ;;
  esac
}
# validate every combination before bringing anything up
for label in "${schemes[@]}"; do
  for k in 0 1 2; do
    # shellcheck disable=SC2046
    "$bin" check "$cfg" $(scheme_args "$label") $(straggler_args "$k") >/dev/null
  done
done

$emu down >/dev/null 2>&1 || true
$emu up --hosts 13 --bandwidth "$rate"
trap '$emu down >/dev/null 2>&1 || true' EXIT
$emu link h1 h2 10 | tee "$out.link" >&2 || true
reproduce_burst "$out.burst"
for rep in $(seq "$reps"); do
  for label in "${schemes[@]}"; do
    for k in 0 1 2; do
      echo "reproduce-comm: rep $rep/$reps: $label, $k straggler(s)" >&2
      # shellcheck disable=SC2046
      $emu run "$cfg" $(scheme_args "$label") $(straggler_args "$k") --set "run.name=$label-s$k-r$rep" --set "run.out_dir=$out" >/dev/null
    done
  done
done
$emu drops | awk '{e+=$3; i+=$5} END {print e+0, i+0}' > "$out.drops"
$emu down >/dev/null 2>&1 || true
trap - EXIT

# the simulator's prediction: the shaped rate as every NIC's bandwidth
for label in "${schemes[@]}"; do
  for k in 0 1 2; do
    # shellcheck disable=SC2046
    "$bin" simulate "$cfg" --trials 3 --math off $(scheme_args "$label") $(straggler_args "$k") \
      --set "run.name=$label-s$k" --set "run.out_dir=$out-sim" --set "network.bandwidth=\"$rate\"" >/dev/null
  done
done
"$bin" bench decode --sizes 12,24,48,96,192 --len 100000 --sets 20 > "$out.decode.csv"

mkdir -p docs/results
rm -rf docs/results/comm
"$bin" report "$out" --out docs/results/comm --baseline "$(ls -d "$out"/umw-s0-r1-* | head -1)" >/dev/null
python3 scripts/reproduce/comm_doc.py "$out" "$rate" "$(cat "$out.link")" "$out-sim" "$(cat "$out.drops")" "$out.decode.csv" "$(cat "$out.burst")" > docs/results/comm.md
rm -f "$out.link" "$out.drops" "$out.burst"
echo "reproduce-comm: wrote docs/results/comm.md (runs in $out)" >&2
