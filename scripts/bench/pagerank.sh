#!/usr/bin/env bash
# Coded PageRank on the emulated cluster (make bench section 9): K = 5 hosts, one server each,
# every link shaped to BANDWIDTH both ways; coded and uncoded Shuffle for r = 1..K−1 on the
# Erdős–Rényi graph of configs/bench/pagerank.toml, REPS interleaved repetitions. Prints a
# Markdown report: per-phase times (max over servers), bytes, the best r and its speedup over
# r = 1, beside the thesis's EC2 figures and the load model's predicted best r. Needs root.
#   scripts/bench/pagerank.sh [OUT_DIR] [REPS] [BANDWIDTH]
set -euo pipefail
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$here"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="${1:-runs/bench-pagerank-$(date -u +%Y%m%d-%H%M%S)}"
reps="${2:-2}"
bw="${3:-100mbit}"
cfg=configs/bench/pagerank.toml
[ "$(id -u)" -eq 0 ] || { echo "bench-pagerank: needs root for the emulated cluster (network namespaces); skipped" >&2; echo "(section 9 skipped: not root)"; exit 0; }
export OUTRUN_EMU_CLUSTER=prbench
emu=launch/emu-cluster
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh   # reproduce_burst
servers=$("$bin" config "$cfg" | awk -F' = ' '/^servers/{print $2}')
$emu up --hosts "$servers" --bandwidth "$bw" >&2
trap '$emu down >&2' EXIT
mkdir -p "$out"
reproduce_burst "$out/burst"
"$bin" pagerank-load --config "$cfg" --json > "$out/loads.jsonl"
# the runs: the sweep configs/sweeps/pagerank-bench.toml (r × coded/uncoded, interleaved)
"$bin" sweep configs/sweeps/pagerank-bench.toml --repetitions "$reps" --out "$out" >/dev/null
python3 scripts/bench/pagerank.py "$out" "$bw"
