#!/usr/bin/env bash
# How a rank waits, where each rank has a core of its own (issue 43): the master-worker overhead
# config (configs/bench/overhead.toml, p = 5 000, tiny compute) with UMW and one worker (2 ranks)
# against the `allreduce` scheme (MPI_Allreduce) with two (2 ranks), each under engine.idle =
# "sleep" (the wait before "auto"), "auto" (spin: the ranks are at most the cores) and "yield", in REPS
# interleaved rounds. Median iteration (ms) of each run and UMW / allreduce per round; the
# target is UMW <= 1.3x allreduce under auto. Run it on a host with at least 2 free cores.
#   scripts/bench/idle.sh OUT_DIR [REPS] [ITERATIONS]      (defaults 3 and 2000)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: scripts/bench/idle.sh OUT_DIR [REPS] [ITERATIONS]" >&2
  exit 2
fi
out="$(mkdir -p "$1" && cd "$1" && pwd)"; reps="${2:-3}"; iters="${3:-2000}"
median_ms() {
  python3 - "$1" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("%.3f" % (1e3 * statistics.median(float(r["wall_s"]) for r in rows)))
PY
}
run() { # tag, then --set arguments: the median iteration of the run, in ms
  local tag=$1; shift
  local dir="$out/$tag"
  rm -rf "$dir"
  if ! OUTRUN_TIMEOUT=300 "$here/launch/local.sh" "$here/configs/bench/overhead.toml" \
      --set run.iterations="$iters" --set run.out_dir="$dir" "$@" > "$out/$tag.log" 2>&1; then
    echo "idle.sh: the run $tag failed: $out/$tag.log" >&2
    exit 1
  fi
  median_ms "$(ls -d "$dir"/*/ | tail -1)iterations.csv"
}
echo "| round | engine.idle | UMW, 1 worker (ms) | allreduce, 2 workers (ms) | UMW / allreduce |"
echo "|---|---|---|---|---|"
for rep in $(seq 1 "$reps"); do
  for idle in sleep auto yield; do
    u=$(run "umw-$idle-$rep" --set scheme.kind=umw --set scheme.workers=1 --set scheme.s= --set engine.idle=$idle)
    a=$(run "allreduce-$idle-$rep" --set scheme.kind=allreduce --set scheme.workers=2 --set scheme.s= --set engine.idle=$idle)
    echo "| $rep | $idle | $u | $a | $(python3 -c "print('%.2f' % ($u / $a))") |"
  done
done
