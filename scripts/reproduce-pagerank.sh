#!/usr/bin/env bash
# Coded PageRank at the thesis's EC2 scale (§2.7, Figs. 2.8a–c) on the emulated cluster (needs
# root): scenario 2's graph, Erdős–Rényi n = 12 600, p = 0.3, on K = 10 servers, one per
# emulated host, every link RATE both ways (default 100mbit, the thesis's cap); coded and
# uncoded Shuffle for r = 1..5, REPS interleaved repetitions (default 2) each, with every
# transfer started at once (our default: configs/sweeps/pagerank-s2.toml) and one turn at a time
# (the thesis's schedule: configs/sweeps/pagerank-s2-turns.toml), 4 PageRank iterations a run.
# Writes docs/results/pagerank.md. Run by `outrun reproduce pagerank-ec2` (OUTRUN_REPRODUCE_VALUES set:
# the page goes to the run directory and ours to that file; docs/ are left as they are).
# Scenario 1's graph (TheMarker Cafe) is not in the repository; scenario 3 (n = 90 090, K = 15)
# is not run (each of its runs draws 4·10⁹ vertex pairs on every rank before it starts).
#   scripts/reproduce-pagerank.sh [RATE] [REPS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-100mbit}"; reps="${2:-2}"
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init pagerank prrepro
cfg=configs/reproduce/pagerank-s2.toml
sweep=configs/sweeps/pagerank-s2.toml
"$bin" check "$cfg" >/dev/null
servers=$("$bin" config "$cfg" | awk -F' = ' '/^servers/{print $2}')
echo "reproduce-pagerank: scenario 2, K = $servers servers at $rate" >&2
$emu up --hosts "$servers" --bandwidth "$rate" >&2
$emu link h1 h2 10 > "$out/link" || true
"$bin" pagerank-load --config "$cfg" --json > "$out/loads.jsonl"
"$bin" sweep "$sweep" --repetitions "$reps" --out "$out" >/dev/null
mkdir -p "$out/turns"
cp "$out/loads.jsonl" "$out/turns/"
"$bin" sweep configs/sweeps/pagerank-s2-turns.toml --repetitions "$reps" --out "$out/turns" >/dev/null
$emu drops | awk '{e+=$3; i+=$5} END {print e+0, i+0}' > "$out/drops"
$emu down >&2

page=docs/results/pagerank.md
[ -z "${OUTRUN_REPRODUCE_VALUES:-}" ] || page="$out/pagerank.md"
mkdir -p "$(dirname "$page")"
PAGERANK_JSON="$out/summary.json" python3 scripts/bench/pagerank.py "$out" "$rate" \
  "# Coded PageRank at the thesis's scenario 2 (EC2, Fig. 2.8b) on the emulated cluster" > "$page.tmp"
PAGERANK_JSON="$out/turns/summary.json" python3 scripts/bench/pagerank.py "$out/turns" "$rate" "turns" > "$page.turns"
python3 scripts/reproduce/pagerank_doc.py "$out" "$rate" "$page.tmp" "$page.turns" > "$page"
rm -f "$page.tmp" "$page.turns"
echo "reproduce-pagerank: wrote $page (runs in $out)" >&2
