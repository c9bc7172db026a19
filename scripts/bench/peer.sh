#!/usr/bin/env bash
# outrun vs Tandon et al.'s published mpi4py gradient coding on the same job, per iteration:
#   scripts/bench/peer.sh PEER_CHECKOUT OUT_DIR [PAIRS] [DELAY_MS]
# PEER_CHECKOUT is a checkout of https://github.com/rashisht1/gradient_coding (not part of this
# project: `git clone https://github.com/rashisht1/gradient_coding`); it is copied to OUT_DIR and
# edited for Python 3 (integer divisions only: scripts/bench/peer.py lists them). The peer's
# generate_data.py writes a 10 000 × 1 000 logistic-regression set for 10 workers; outrun reads
# the same rows as CSV. For each scheme (UMW, cyclic GC s = 1 and 2, fractional repetition
# s = 1, ignore-stragglers s = 1), without and with worker 3 delayed by DELAY_MS (default 10)
# before each result in both, PAIRS (default 3) interleaved pairs of runs: outrun's mean per
# iteration (summary.json) and the peer's (its master's 100 iterations between the barriers
# around its loop, over 100: peer.py says why not its "Total Time Elapsed").
# Writes OUT_DIR/peer.csv and prints the markdown table. Needs mpi4py, numpy, scipy and
# scikit-learn (the peer scores every iteration after its loop) in $PY (default .venv/bin/python).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 2 ]; then
  echo "usage: scripts/bench/peer.sh PEER_CHECKOUT OUT_DIR [PAIRS] [DELAY_MS]" >&2
  exit 2
fi
checkout="$1"; out="$(mkdir -p "$2" && cd "$2" && pwd)"; pairs="${3:-3}"; delay_ms="${4:-10}"
PY="${PY:-$here/.venv/bin/python}"
case "$PY" in */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;; esac # absolute: the peer's steps cd
helper="$here/scripts/bench/peer.py"
if ! "$PY" -c "import mpi4py, numpy, scipy, sklearn" 2>/dev/null; then
  echo "peer: $PY lacks mpi4py, numpy, scipy or scikit-learn (pip install them)" >&2
  exit 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 EVENT_NOEPOLL=1 OPENBLAS_NUM_THREADS=1
MPIRUN=(timeout --kill-after=10 "${OUTRUN_TIMEOUT:-600}" mpirun --quiet --oversubscribe --bind-to none --mca btl self,vader,tcp --mca btl_base_warn_component_unused 0)
workers=10 rows=10000 cols=1000 iterations=100 slow=3

"$PY" "$helper" prepare "$checkout" "$out/peer-src"
data="$out/peer-data/artificial-data/${rows}x${cols}/$workers"
if [ ! -f "$data/label_test.dat" ]; then
  echo "peer: generating the peer's $rows x $cols data set" >&2
  (cd "$out/peer-src" && "$PY" src/generate_data.py $((workers + 1)) $rows $cols "$out/peer-data" 1 0 0 >/dev/null)
fi
[ -f "$out/peer-data.csv" ] || "$PY" "$helper" csv "$data" $workers "$out/peer-data.csv"
"$PY" "$helper" delays $workers $slow "$(awk "BEGIN{print $delay_ms/1000}")" $iterations "$out/delays.csv"

# name | outrun settings | the peer's is_coded n_stragglers partitions coded_ver
schemes=(
  "umw|scheme.kind=umw|0 0 0 0"
  "gc-cyclic s=1|scheme.kind=gc-cyclic scheme.s=1|1 1 0 0"
  "gc-cyclic s=2|scheme.kind=gc-cyclic scheme.s=2|1 2 0 0"
  "gc-frac s=1|scheme.kind=gc-frac scheme.s=1|1 1 0 1"
  "ignore s=1|scheme.kind=ignore scheme.s=1|1 1 0 2"
)
echo "scheme,delay_ms,pair,outrun_s,peer_s" > "$out/peer.csv"
for d in 0 "$delay_ms"; do
  strag=()
  [ "$d" = 0 ] || strag=(--set stragglers.model=\"trace\" --set stragglers.times=\"delay\" --set "stragglers.file=\"$out/delays.csv\"")
  for entry in "${schemes[@]}"; do
    IFS='|' read -r name sets peer_args <<< "$entry"
    set_args=()
    for s in $sets; do set_args+=(--set "$s"); done
    for pair in $(seq "$pairs"); do
      echo "peer: $name, delay $d ms, pair $pair" >&2
      "$here/launch/local.sh" "$here/configs/bench/peer.toml" --set "data.path=\"$out/peer-data.csv\"" \
        --set "run.out_dir=\"$out/outrun-runs\"" "${set_args[@]}" "${strag[@]}" --quiet >/dev/null
      run_dir=$(ls -td "$out"/outrun-runs/peer-* | head -1)
      ours=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_s'])" "$run_dir/summary.json")
      log="$out/peer-logs/$(echo "$name" | tr ' =' '__')-$d-$pair.log"
      mkdir -p "$out/peer-logs"
      # shellcheck disable=SC2086
      PEER_DELAY_S=$(awk "BEGIN{print $d/1000}") PEER_SLOW_RANK=$slow "${MPIRUN[@]}" -np $((workers + 1)) \
        "$PY" "$helper" run "$out/peer-src" $((workers + 1)) $rows $cols "$out/peer-data" 0 x $peer_args > "$log" 2>&1
      theirs=$("$PY" "$helper" elapsed "$log" $iterations)
      echo "$name,$d,$pair,$ours,$theirs" >> "$out/peer.csv"
    done
  done
done
"$PY" "$helper" report "$out/peer.csv"
