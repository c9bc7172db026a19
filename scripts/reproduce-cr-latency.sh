#!/usr/bin/env bash
# make reproduce-cr-latency: the thesis's N = 84 CodedReduce setting on 85 emulated hosts (needs
# root), CR against our ring all-reduce (RAR) and UMW without and with a per-message latency that
# the engine holds every message for ([links] model = "latency", LATENCY seconds, default 0.001:
# this kernel's tc has no netem), configs/sweeps/cr-84-latency.toml, REPS interleaved repetitions
# (default 2). Simulates every run's config with the shaped rate as the network's bandwidth (the
# simulator holds the messages the same way) and writes docs/results/cr-latency.md.
#   scripts/reproduce-cr-latency.sh [RATE] [REPS] [LATENCY]      (defaults: 20mbit 2 0.001)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-2}"; latency="${3:-0.001}"
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init cr-latency repro
sweep="$out/cr-84-latency.toml"
sed -e "s|links.latency=0.001|links.latency=$latency|" -e 's|"../reproduce/|"'"$here"'/configs/reproduce/|' \
  configs/sweeps/cr-84-latency.toml > "$sweep"
$emu up --hosts 85 --bandwidth "$rate" >&2
"$bin" sweep "$sweep" --repetitions "$reps" --out "$out" >/dev/null
$emu down >&2
for run in "$out"/runs/*-rep1-*/; do
  "$bin" simulate "$run/config.toml" --trials 20 --math off --set "run.name=$(basename "$run")" \
    --set "run.out_dir=$out/sim" --set "network.bandwidth=\"$rate\"" >/dev/null
done
python3 scripts/reproduce/cr_latency_doc.py "$out" "$rate" "$latency" > docs/results/cr-latency.md
echo "reproduce-cr-latency: wrote docs/results/cr-latency.md (runs in $out)" >&2
