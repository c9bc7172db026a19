#!/usr/bin/env bash
# make reproduce-cr: the CodedReduce comparison on an emulated cluster (needs root).
# N = 12: 13 hosts with every link shaped to RATE (default 20mbit), CR on the (3,2) tree against
# UMW, ignore-stragglers, GC, our ring all-reduce and MPI_Allreduce on 12 workers with the same data
# and the same injected shifted-exponential delays (the sweep configs/sweeps/cr-12.toml, REPS
# interleaved repetitions, default 2). Then the papers' scale with one rank per host: the thesis's
# N = 84 on 85 hosts, CR on the (4,3) tree (configs/sweeps/cr-84.toml; N = 56 on the (7,2) tree,
# configs/sweeps/cr-56.toml, also runs: pass SIZES "12 56 84"). Simulates every run's
# config (outrun simulate, the shaped rate as the network's bandwidth) and writes
# docs/results/cr.md (+ plots in docs/results/cr/): measured beside simulated beside the papers'.
#   scripts/reproduce-cr.sh [RATE] [REPS] [SIZES]      (defaults: 20mbit 2 "12 84")
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-2}"; sizes="${3:-12 84}"
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init cr repro
for n in $sizes; do
  echo "reproduce-cr: N = $n" >&2
  dir="$out/n$n"
  $emu up --hosts $((n + 1)) --bandwidth "$rate" >&2
  mkdir -p "$dir"
  reproduce_burst "$dir/burst"
  $emu link h1 h2 10 > "$dir/link" || true
  "$bin" sweep "configs/sweeps/cr-$n.toml" --repetitions "$reps" --out "$dir" >/dev/null
  reproduce_drops "$dir/drops"
  $emu down >&2
  simulate_first_runs "$dir" "$rate"
done
mkdir -p docs/results
rm -rf docs/results/cr
first=$(echo $sizes | awk '{print $1}')
"$bin" report "$out/n$first/runs" --out docs/results/cr --baseline "$(ls -d "$out/n$first"/runs/*-kind-cr-rep1-* | head -1)" >/dev/null
python3 scripts/reproduce/cr_doc.py "$out" "$rate" > docs/results/cr.md
echo "reproduce-cr: wrote docs/results/cr.md (runs in $out)" >&2
