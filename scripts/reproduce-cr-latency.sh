#!/usr/bin/env bash
# make reproduce-cr-latency: CodedReduce at the papers' scale on emulated hosts (needs root), one
# rank per host: the thesis's N = 84 (85 hosts, configs/sweeps/cr-84-latency.toml) and the CR
# paper's N = 156 (157 hosts, configs/sweeps/cr-156-latency.toml), CR against our ring all-reduce
# (RAR) and UMW without and with a per-message latency that the engine holds every message for
# ([links] model = "latency", LATENCY seconds, default 0.001: this kernel's tc has no netem), REPS
# interleaved repetitions (default 2). Simulates every run's config with the shaped rate as the
# network's bandwidth (the simulator holds the messages the same way) and writes
# docs/results/cr-latency.md.
#   scripts/reproduce-cr-latency.sh [RATE] [REPS] [LATENCY] [SIZES]   (defaults: 20mbit 2 0.001 "84 156")
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-2}"; latency="${3:-0.001}"; sizes="${4:-84 156}"
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init cr-latency repro
for n in $sizes; do
  echo "reproduce-cr-latency: N = $n" >&2
  dir="$out/n$n"
  mkdir -p "$dir"
  sweep="$dir/cr-$n-latency.toml"
  sed -e "s|links.latency=0.001|links.latency=$latency|" -e 's|"../reproduce/|"'"$here"'/configs/reproduce/|' \
    "configs/sweeps/cr-$n-latency.toml" > "$sweep"
  $emu up --hosts $((n + 1)) --bandwidth "$rate" >&2
  reproduce_burst "$dir/burst"
  "$bin" sweep "$sweep" --repetitions "$reps" --out "$dir" >/dev/null
  $emu down >&2
  simulate_first_runs "$dir" "$rate"
done
python3 scripts/reproduce/cr_latency_doc.py "$out" "$rate" "$latency" > docs/results/cr-latency.md
echo "reproduce-cr-latency: wrote docs/results/cr-latency.md (runs in $out)" >&2
