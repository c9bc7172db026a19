#!/usr/bin/env bash
# make reproduce-cr: the CodedReduce comparison on an emulated cluster (needs root).
# Brings up 13 hosts with every link shaped to RATE (default 20mbit), runs CR on the (3,2) tree
# and UMW, ignore-stragglers, GC, our ring all-reduce and MPI_Allreduce on 12 workers with the
# same data and the same injected shifted-exponential delays, REPS times each (default 2),
# tears the cluster down, simulates the same runs (outrun simulate, the shaped rate as the
# network's bandwidth), and writes docs/results/cr.md (+ plots in docs/results/cr/).
#   scripts/reproduce-cr.sh [RATE] [REPS]
set -euo pipefail
# every MPI job is bounded in time (launch/local.sh, launch/emu-cluster honour it)
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-2}"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
cfg=configs/reproduce/cr-emu.toml
out="runs/reproduce-cr-$(date -u +%Y%m%d-%H%M%S)"
export OUTRUN_EMU_CLUSTER=repro
emu=launch/emu-cluster
[ "$(id -u)" -eq 0 ] || { echo "reproduce-cr: needs root (network namespaces); run it with sudo" >&2; exit 2; }
$emu down >/dev/null 2>&1 || true
$emu up --hosts 13 --bandwidth "$rate"
trap '$emu down >/dev/null 2>&1 || true' EXIT
$emu link h1 h2 10 | tee "$out.link" >&2 || true
flat=(--set scheme.n= --set scheme.layers= --set scheme.workers=12)
for rep in $(seq "$reps"); do
  for kind in cr gc-cyclic umw ignore rar allreduce; do
    case "$kind" in
      cr) args=() ;;
      gc-cyclic|ignore) args=("${flat[@]}" --set scheme.s=4) ;;
      *) args=("${flat[@]}" --set scheme.s=) ;;
    esac
    echo "reproduce-cr: rep $rep/$reps: $kind" >&2
    $emu run "$cfg" --set "scheme.kind=$kind" --set "run.name=$kind-r$rep" --set "run.out_dir=$out" "${args[@]}" >/dev/null
  done
done
$emu drops | awk '{e+=$3; i+=$5} END {print e+0, i+0}' > "$out.drops"
# the simulator's prediction for each scheme: the shaped rate as every NIC's bandwidth, the
# engine's semantics (model messages cost time, late results cross the link)
for kind in cr gc-cyclic umw ignore rar allreduce; do
  case "$kind" in
    cr) args=() ;;
    gc-cyclic|ignore) args=("${flat[@]}" --set scheme.s=4) ;;
    *) args=("${flat[@]}" --set scheme.s=) ;;
  esac
  "$bin" simulate "$cfg" --trials 20 --math off --set "scheme.kind=$kind" --set "run.name=$kind" \
    --set "run.out_dir=$out-sim" --set "network.bandwidth=\"$rate\"" "${args[@]}" >/dev/null
done
mkdir -p docs/results
rm -rf docs/results/cr
"$bin" report "$out" --out docs/results/cr --baseline "$(ls -d "$out"/cr-r1-* | head -1)" >/dev/null
python3 scripts/reproduce/cr_doc.py "$out" "$rate" "$(cat "$out.link")" "$out-sim" "$(cat "$out.drops")" > docs/results/cr.md
rm -f "$out.link" "$out.drops"
echo "reproduce-cr: wrote docs/results/cr.md (runs in $out)" >&2
