#!/usr/bin/env bash
# Time to first iteration on a large data file (issue 31): a 10 000 × 1 000 dense LIBSVM file
# (seeded, written here), logistic regression, cyclic GC with 10 workers (s = 1), one iteration,
# launch to end with launch/local.sh. Measured REPS times each (default 3, median):
#   parse      `outrun check` with the shape cache off: one full parse of the file
#   start-up   the same launch on a synthetic set of the same width and 100 rows: MPI's start-up
#              and the run's own fixed costs, with no file to read
#   first      a launch with an empty shape cache (the file never launched before)
#   again      a launch of the same file again (its shape cached)
# Target: first <= 2 x parse + start-up.
#   scripts/bench/startup.sh OUT_DIR [REPS]     prints the markdown table
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
if [ $# -lt 1 ]; then
  echo "usage: scripts/bench/startup.sh OUT_DIR [REPS]" >&2
  exit 2
fi
out="$(mkdir -p "$1" && cd "$1" && pwd)"; reps="${2:-3}"
file="$out/startup.libsvm"
if [ ! -f "$file" ]; then
  python3 - "$file" <<'PY'
import random, sys
rng = random.Random(31)
w = [rng.gauss(0, 1) for _ in range(1000)]
with open(sys.argv[1], "w") as f:
    for _ in range(10000):
        x = [rng.gauss(0, 1) for _ in range(1000)]
        label = 1 if sum(a * b for a, b in zip(x, w)) > 0 else 0
        f.write(str(label) + " " + " ".join(f"{k + 1}:{v:.6f}" for k, v in enumerate(x)) + "\n")
PY
fi
config="$here/configs/bench/peer.toml"
common=(--set run.iterations=1 --set "run.out_dir=\"$out/runs\"" --set scheme.kind=\"gc-cyclic\" --set scheme.s=1)
on_file=(--set data.kind=\"libsvm\" --set "data.path=\"$file\"")
seconds() { local t0; t0=$(date +%s.%N); "$@" >/dev/null; awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }

echo "what,rep,seconds" > "$out/startup.csv"
for rep in $(seq "$reps"); do
  echo "parse,$rep,$(OUTRUN_NO_CACHE=1 seconds "$bin" check "$config" "${common[@]}" "${on_file[@]}")" >> "$out/startup.csv"
  echo "start-up,$rep,$(seconds "$here/launch/local.sh" "$config" "${common[@]}" --set data.kind=\"logistic-synthetic\" \
    --set data.path= --set data.samples=100 --set data.features=1000 --quiet)" >> "$out/startup.csv"
  cache="$(mktemp -d)"
  echo "first,$rep,$(XDG_CACHE_HOME="$cache" seconds "$here/launch/local.sh" "$config" "${common[@]}" "${on_file[@]}" --quiet)" >> "$out/startup.csv"
  echo "again,$rep,$(XDG_CACHE_HOME="$cache" seconds "$here/launch/local.sh" "$config" "${common[@]}" "${on_file[@]}" --quiet)" >> "$out/startup.csv"
  rm -rf "$cache"
done
python3 - "$out/startup.csv" "$file" <<'PY'
import csv, os, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = {w: [float(r["seconds"]) for r in rows if r["what"] == w] for w in ["parse", "start-up", "first", "again"]}
m = {w: statistics.median(v) for w, v in t.items()}
target = 2 * m["parse"] + m["start-up"]
print(f"A {os.path.getsize(sys.argv[2]) / 1e6:.0f} MB LIBSVM file (10 000 × 1 000 dense), logistic regression, "
      "cyclic GC with 10 workers (s = 1), one iteration, launch to end (median of "
      f"{len(t['parse'])}). Target: a first launch ≤ 2 × one parse + the start-up = {target:.2f} s.\n")
print("| | median s | runs | |")
print("|---|---|---|---|")
what = {"parse": "one parse (`outrun check`, cache off)", "start-up": "start-up (100 synthetic rows)",
        "first": "first launch of the file", "again": "the file launched again"}
for w, name in what.items():
    note = ("met" if m[w] <= target else "missed") if w in ("first", "again") else ""
    print(f"| {name} | {m[w]:.2f} | {' '.join('%.2f' % v for v in t[w])} | {note} |")
print()
PY
