#!/usr/bin/env bash
# Coded PageRank at the thesis's EC2 scale (§2.7, Figs. 2.8a–c) on the emulated cluster (needs
# root): scenario 2's graph, Erdős–Rényi n = 12 600, p = 0.3, on K = 10 servers, one per
# emulated host, every link RATE both ways (default 100mbit, the thesis's cap); coded and
# uncoded Shuffle for r = 1..5, REPS interleaved repetitions (default 2) each, with every
# transfer started at once (our default: configs/sweeps/pagerank-s2.toml) and one turn at a time
# (the thesis's schedule: configs/sweeps/pagerank-s2-turns.toml), 4 PageRank iterations a run;
# then scenario 3's, Erdős–Rényi n = 90 090, p = 0.01, on K = 15 servers, coded and uncoded
# Shuffle taking turns for r = 1..5, one repetition of 3 iterations
# (configs/sweeps/pagerank-s3-turns.toml: its coded runs' setup alone takes about 10 minutes).
# Writes docs/results/pagerank.md. Run by
# `outrun reproduce pagerank-ec2` (OUTRUN_REPRODUCE_VALUES set: the page goes to the run
# directory and ours to that file; docs/ are left as they are). Scenario 1's graph (TheMarker
# Cafe) is not in the repository.
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
sweep_turns=configs/sweeps/pagerank-s2-turns.toml
cfg3=configs/reproduce/pagerank-s3.toml
sweep3=configs/sweeps/pagerank-s3-turns.toml
"$bin" check "$cfg" >/dev/null
servers=$("$bin" config "$cfg" | awk -F' = ' '/^servers/{print $2}')
echo "reproduce-pagerank: scenario 2, K = $servers servers at $rate" >&2
$emu up --hosts "$servers" --bandwidth "$rate" >&2
$emu link h1 h2 10 > "$out/link" || true
reproduce_burst "$out/burst"
"$bin" pagerank-load --config "$cfg" --json > "$out/loads.jsonl"
"$bin" sweep "$sweep" --repetitions "$reps" --out "$out" >/dev/null
mkdir -p "$out/turns"
cp "$out/loads.jsonl" "$out/turns/"
"$bin" sweep "$sweep_turns" --repetitions "$reps" --out "$out/turns" >/dev/null
reproduce_drops "$out/drops"
$emu down >&2

"$bin" check "$cfg3" >/dev/null
servers3=$("$bin" config "$cfg3" | awk -F' = ' '/^servers/{print $2}')
echo "reproduce-pagerank: scenario 3, K = $servers3 servers at $rate" >&2
mkdir -p "$out/s3"
$emu up --hosts "$servers3" --bandwidth "$rate" >&2
"$bin" pagerank-load --config "$cfg3" --r 1..5 --json > "$out/s3/loads.jsonl"
# a coded run at r = 5 sets up 5005 groups' communicators (about 5 minutes here) before its iterations
OUTRUN_TIMEOUT=1800 "$bin" sweep "$sweep3" --out "$out/s3" >/dev/null
reproduce_drops "$out/s3/drops"
$emu down >&2

page=docs/results/pagerank.md
[ -z "${OUTRUN_REPRODUCE_VALUES:-}" ] || page="$out/pagerank.md"
mkdir -p "$(dirname "$page")"
PAGERANK_JSON="$out/summary.json" python3 scripts/bench/pagerank.py "$out" "$rate" \
  "# Coded PageRank at the thesis's scenarios 2 and 3 (EC2, Figs. 2.8b–c) on the emulated cluster" > "$page.tmp"
PAGERANK_JSON="$out/turns/summary.json" python3 scripts/bench/pagerank.py "$out/turns" "$rate" "turns" > "$page.turns"
PAGERANK_JSON="$out/s3/summary.json" python3 scripts/bench/pagerank.py "$out/s3" "$rate" "s3" > "$page.s3"
python3 scripts/reproduce/pagerank_doc.py "$out" "$rate" "$page.tmp" "$page.turns" "$page.s3" > "$page"
rm -f "$page.tmp" "$page.turns" "$page.s3"
echo "reproduce-pagerank: wrote $page (runs in $out)" >&2
