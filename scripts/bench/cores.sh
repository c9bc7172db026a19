#!/usr/bin/env bash
# One rank per core (issue 43, item 4): for each rank count R given, every rank bound to a core
# of its own (mpirun --bind-to core), in REPS interleaved rounds:
#   - the master-worker floor: `outrun bench floor` (MPI_Bcast of the model + MPI_Gather of the
#     results, summed at rank 0; p = 5 000 values, the bytes UMW moves), R ranks;
#   - the engine's iteration, configs/bench/overhead.toml (p = 5 000, two samples per worker,
#     tiny compute, no delay): UMW, gc-cyclic and gc-frac with R - 1 workers and a master, the
#     `allreduce` scheme (MPI_Allreduce) with R workers;
#   - our all-reduce (`auto` schedule) against MPI_Allreduce, 1 KB .. 16 MB (`outrun bench ring`).
# Prints ratios only (markdown), each against a baseline run in the same invocation; the raw
# CSV files and run directories stay in OUT_DIR. A rank count above this host's cores is refused:
# the figures are one rank per core or nothing. A run that fails is a `failed` cell, the tail of
# its log goes to stderr, the other runs go on, and the script exits 1 at the end. Where R exceeds the physical cores this process
# may run on but not its hardware threads, each rank is bound to a hardware thread of its own
# instead, and the header says so (two ranks may then share a core's execution units).
#   scripts/bench/cores.sh OUT_DIR RANKS...   (env: REPS=3, ITERS=2000, OUTRUN_BIN,
#                                              BIND=auto|core|hwthread)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 2 ]; then
  echo "usage: scripts/bench/cores.sh OUT_DIR RANKS...   (e.g. scripts/bench/cores.sh /tmp/cores 2 8 16)" >&2
  exit 2
fi
out="$(mkdir -p "$1" && cd "$1" && pwd)"; shift
rm -f "$out/failed"
reps="${REPS:-3}"; iters="${ITERS:-2000}"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
topology() { # "<hardware threads> <physical cores>" this process may run on
  python3 - <<'PY'
import os
cpus = sorted(os.sched_getaffinity(0))
def read(c, f):
    try:
        return open("/sys/devices/system/cpu/cpu%d/topology/%s" % (c, f)).read().strip()
    except OSError:
        return str(c)
print(len(cpus), len({(read(c, "physical_package_id"), read(c, "core_id")) for c in cpus}))
PY
}
read -r cores physical <<< "$(topology)"
bind="${BIND:-auto}"
case $bind in
  auto) bind=core
    for r in "$@"; do [[ "$r" =~ ^[0-9]+$ ]] && [ "$r" -gt "$physical" ] && bind=hwthread; done ;;
  core | hwthread) ;;
  *) echo "cores.sh: BIND is auto, core or hwthread, not \`$bind\`" >&2; exit 2 ;;
esac
[ "$bind" = core ] && cores=$physical
for r in "$@"; do
  if ! [[ "$r" =~ ^[0-9]+$ ]] || [ "$r" -lt 2 ]; then
    echo "cores.sh: a rank count is an integer of at least 2, not \`$r\`" >&2
    exit 2
  fi
  if [ "$r" -gt "$cores" ]; then
    echo "cores.sh: $r ranks on $cores $([ "$bind" = core ] && echo "physical cores" || echo "hardware threads") would share them; give at most $cores" >&2
    exit 2
  fi
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 EVENT_NOEPOLL=1 OPENBLAS_NUM_THREADS=1
if [ "$bind" = core ]; then
  flags=(--bind-to core --map-by core)
  unit="one rank per core (--bind-to core)"
else
  flags=(--use-hwthread-cpus --bind-to hwthread --map-by hwthread)
  unit="one rank per hardware thread (--bind-to hwthread; $physical physical cores)"
fi
export OUTRUN_BIN="$bin" OUTRUN_MPIRUN_FLAGS="${flags[*]}"
MPIRUN=(timeout --kill-after=10 300 mpirun --quiet "${flags[@]}"
  --mca btl self,vader,tcp --mca btl_base_warn_component_unused 0)

median_ms() { # the median wall_s of a run's iterations.csv, in ms
  python3 - "$1" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("%.4f" % (1e3 * statistics.median(float(r["wall_s"]) for r in rows)))
PY
}
failed() { # what, log: say on stderr that it failed, with the log's last lines; mark the invocation
  { echo "cores.sh: $1 failed ($2); its last lines:"; tail -n 15 "$2"; } >&2
  touch "$out/failed"
}
run() { # tag, workers, then --set arguments: the run's median iteration (ms)
  local tag=$1 n=$2; shift 2
  local dir="$out/runs/$tag"
  rm -rf "$dir"
  if ! OUTRUN_TIMEOUT=300 "$here/launch/local.sh" "$here/configs/bench/overhead.toml" \
      --set run.iterations="$iters" --set run.out_dir="$dir" --set scheme.workers="$n" \
      --set data.samples=$((2 * n)) "$@" > "$out/$tag.log" 2>&1; then
    failed "the run $tag" "$out/$tag.log"
    echo nan
    return
  fi
  median_ms "$(ls -d "$dir"/*/ | tail -1)iterations.csv"
}
floor() { # ranks: bench floor's median iteration (ms)
  if ! "${MPIRUN[@]}" -np "$1" "$bin" bench floor --values 5000 --iterations "$iters" \
      > "$out/floor-$1-$2.csv" 2> "$out/floor-$1-$2.log"; then
    failed "bench floor at $1 ranks" "$out/floor-$1-$2.log"
    echo nan
    return
  fi
  python3 -c "import csv,sys; r=next(csv.DictReader(open(sys.argv[1]))); assert r['agree']=='true'; print('%.4f' % (1e3*float(r['median_s'])))" "$out/floor-$1-$2.csv"
}
# a failed run's cell is "failed" (its time is nan); the median is of the rounds that ran
ratio() { python3 -c "import math,sys; r = float(sys.argv[1]) / float(sys.argv[2]); print('failed' if math.isnan(r) else '%.2f' % r)" "$1" "$2"; }
median() { python3 -c "import statistics,sys; v = [float(x) for x in sys.argv[1:] if x != 'failed']; print('%.2f' % statistics.median(v) if v else 'failed')" "$@"; }
workers() { [ "$1" -eq 1 ] && echo "1 worker" || echo "$1 workers"; }
frac_s() { # the smallest s >= 1 with (s + 1) dividing n workers (gc-frac's groups)
  local n=$1 s=1
  while [ $(((n) % (s + 1))) -ne 0 ]; do s=$((s + 1)); done
  echo "$s"
}

echo "Host: $cores CPUs, $physical physical cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(hostname); $unit; $reps interleaved rounds of $iters iterations; $(date -u +%F)."
echo
for r in "$@"; do
  n=$((r - 1))
  declare -A got=()
  kinds=(umw allreduce)
  [ "$n" -ge 2 ] && kinds+=(gc-cyclic gc-frac)
  for rep in $(seq 1 "$reps"); do
    got[floor,$rep]=$(floor "$r" "$rep")
    for kind in "${kinds[@]}"; do
      case $kind in
        umw) got[$kind,$rep]=$(run "$kind-$r-$rep" "$n" --set scheme.kind=umw --set scheme.s=) ;;
        allreduce) got[$kind,$rep]=$(run "$kind-$r-$rep" "$r" --set scheme.kind=allreduce --set scheme.s=) ;;
        gc-cyclic) got[$kind,$rep]=$(run "$kind-$r-$rep" "$n" --set scheme.kind=gc-cyclic --set scheme.s=1) ;;
        gc-frac) got[$kind,$rep]=$(run "$kind-$r-$rep" "$n" --set scheme.kind=gc-frac --set scheme.s="$(frac_s "$n")") ;;
      esac
    done
  done
  echo "### $r ranks"
  echo
  echo "| ratio (median iterations, same invocation) | $(seq -s ' | ' -f 'round %g' 1 "$reps") | median |"
  echo "|---|$(printf -- '---|%.0s' $(seq 1 "$reps"))---|"
  for kind in "${kinds[@]}"; do
    [ "$kind" = allreduce ] && continue
    for base in floor allreduce; do
      cells=(); for rep in $(seq 1 "$reps"); do cells+=("$(ratio "${got[$kind,$rep]}" "${got[$base,$rep]}")"); done
      label="$kind ($(workers "$n")) / $([ "$base" = floor ] && echo "MPI_Bcast + MPI_Gather" || echo "allreduce ($r workers)")"
      echo "| $label | $(IFS='|'; echo "${cells[*]}" | sed 's/|/ | /g') | $(median "${cells[@]}") |"
    done
  done
  cells=(); for rep in $(seq 1 "$reps"); do cells+=("$(ratio "${got[allreduce,$rep]}" "${got[floor,$rep]}")"); done
  echo "| allreduce ($r workers) / MPI_Bcast + MPI_Gather | $(IFS='|'; echo "${cells[*]}" | sed 's/|/ | /g') | $(median "${cells[@]}") |"
  echo
  if ! "${MPIRUN[@]}" -np "$r" "$bin" bench ring --algorithms auto --rounds 5 --seconds 0.3 \
      --sizes 1024,16384,65536,262144,1048576,4194304,16777216 > "$out/ring-$r.csv" 2> "$out/ring-$r.log"; then
    failed "bench ring at $r ranks" "$out/ring-$r.log"
    unset got
    continue
  fi
  python3 - "$out/ring-$r.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert all(r["agree"] == "true" for r in rows), "our all-reduce disagreed with MPI_Allreduce"
def size(b):
    b = int(b)
    return "%d MB" % (b >> 20) if b >= 1 << 20 else "%d KB" % (b >> 10)
print("| our all-reduce (auto) / MPI_Allreduce | " + " | ".join(size(r["bytes"]) for r in rows) + " |")
print("|---|" + "---|" * len(rows))
print("| best of 5 rounds | " + " | ".join("%.2f" % float(r["ratio"]) for r in rows) + " |")
print()
PY
  unset got
done
if [ -e "$out/failed" ]; then
  echo "cores.sh: some runs failed (cells marked failed above; their logs are in $out)" >&2
  exit 1
fi
