#!/usr/bin/env bash
# make bench: measured performance, each comparison against a baseline run in the same
# invocation. Writes runs/bench-<UTC time>/report.md (and the raw CSV files beside it).
#
#   1. gradient kernel throughput vs this machine's memory read bandwidth (one core)
#   2. our all-reduce (each schedule) vs MPI_Allreduce, 1 KB .. 64 MB, 8 ranks
#   3. per-iteration engine overhead per scheme, N = 12, p = 5000, tiny compute, no delay
#   4. the same GC loop in mpi4py + numpy (interleaved pairs with ours)
#   5. the demo's per-iteration time, to put the overhead in proportion
#   6. CodedReduce vs GC, UMW, ignore and RAR with the same shifted-exponential delays
#   7. GC, GC-SC and GC-DC under the same Markov stragglers vs the timing model and the simulator
#   8. coded mat-vec: HCMM vs uniform/load-balanced uncoded and uniform coded, engine vs plan
#      and simulator; the master's decode time vs r beside LAPACK's LU
#   9. coded PageRank on the emulated cluster (needs root): coded and uncoded Shuffle for
#      r = 1..K-1, per-phase times, best r, the load model's prediction
#  10. a network's batch gradient vs dgemm on the same shapes and vs numpy (one thread)
#  11. time to a test accuracy on the ten digits: UMW, GC, ignore, CR, same stragglers
#  12. robust decoding's screening (scheme.byzantine) vs the plain decode of the same results
#  13. every scheme vs Tandon et al.'s published mpi4py gradient coding on the same job, with
#      and without a delayed worker (needs a checkout of it: make bench PEER=/path/to/gradient_coding)
#  14. a UMW and GC iteration vs the memory-bandwidth bound (bytes read / all cores' read rate)
#  15. time to first iteration on a 134 MB LIBSVM file vs one parse and MPI's start-up
#  16. a Python model's iteration (NumPy; PyTorch where it imports) vs the built-in network's
#  17. one rank per core (ranks = this host's cores, each bound to one): UMW, GC and the
#      allreduce scheme vs the master-worker floor (MPI_Bcast + MPI_Gather), our all-reduce vs
#      MPI_Allreduce (scripts/bench/cores.sh; on a bigger host: scripts/bench/cores.sh DIR 8 16)
set -euo pipefail
# every MPI job is bounded in time (launch/local.sh, launch/emu-cluster honour it)
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="runs/bench-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 EVENT_NOEPOLL=1 OPENBLAS_NUM_THREADS=1
MPIRUN=(timeout --kill-after=10 "$OUTRUN_TIMEOUT" mpirun --quiet --oversubscribe --bind-to none --mca btl self,vader,tcp --mca btl_base_warn_component_unused 0)
PAIRS="${BENCH_PAIRS:-7}"

# Python with mpi4py + numpy for the baseline loop, in a project-local venv.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c "import mpi4py, numpy" 2>/dev/null; then
  echo "bench: creating .venv with mpi4py and numpy" >&2
  python3 -m venv .venv
  .venv/bin/pip install -q mpi4py numpy
fi
PY=.venv/bin/python

echo "bench: 1/17 gradient kernel vs memory bandwidth" >&2
"$bin" bench kernel > "$out/kernel.csv"

echo "bench: 2/17 our all-reduce (ring, recursive doubling, halving-doubling, auto) vs MPI_Allreduce (8 ranks)" >&2
"${MPIRUN[@]}" -np 8 "$bin" bench ring --sizes 1024,16384,65536,262144,1048576,4194304,16777216,67108864 --rounds 5 --seconds 0.5 > "$out/ring.csv"

echo "bench: 3/17 engine overhead per scheme (N = 12, p = 5000)" >&2
echo "scheme,rep,mean_s" > "$out/overhead.csv"
for rep in 1 2 3 4 5; do
  for entry in "umw --set scheme.s=" "ignore" "gc-cyclic" "gc-frac" "rar --set scheme.s=" "allreduce --set scheme.s="; do
    # shellcheck disable=SC2086
    set -- $entry; kind="$1"; shift
    launch/local.sh configs/bench/overhead.toml --set "scheme.kind=$kind" --set "run.out_dir=$out/overhead-runs" "$@" >/dev/null
    d=$(ls -td "$out"/overhead-runs/overhead-* | head -1)
    echo "$kind,$rep,$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_s'])" "$d/summary.json")" >> "$out/overhead.csv"
  done
done

echo "bench: 4/17 GC loop: outrun vs mpi4py + numpy, $PAIRS interleaved pairs" >&2
echo "pair,outrun_mean_s,mpi4py_mean_s" > "$out/mpi4py.csv"
for i in $(seq "$PAIRS"); do
  launch/local.sh configs/bench/overhead.toml --set "run.out_dir=$out/pair-runs" >/dev/null
  d=$(ls -td "$out"/pair-runs/overhead-* | head -1)
  ours=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_s'])" "$d/summary.json")
  theirs=$("${MPIRUN[@]}" -np 13 "$PY" scripts/bench/gc_mpi4py.py 300 5000 3 2 | cut -d, -f1)
  echo "$i,$ours,$theirs" >> "$out/mpi4py.csv"
done

echo "bench: 5/17 demo iteration time (gc-cyclic and umw)" >&2
for kind in gc-cyclic "umw --set scheme.s="; do
  # shellcheck disable=SC2086
  launch/local.sh configs/demo.toml --set "run.out_dir=$out/demo-runs" --set scheme.kind=$kind >/dev/null
done

echo "bench: 6/17 CodedReduce comparison ((4,2) tree, 3 repetitions)" >&2
scripts/bench/cr.sh "$out/cr-runs" 3 > /dev/null

echo "bench: 7/17 GC, GC-SC, GC-DC under Markov stragglers vs the timing model" >&2
gcdc_args=()
for entry in "gc-dc" "gc-sc --set scheme.n=" "gc-cyclic --set scheme.s=2 --set scheme.clusters= --set scheme.r= --set scheme.n="; do
  # shellcheck disable=SC2086
  set -- $entry; kind="$1"; shift
  launch/local.sh configs/bench/gcdc.toml --set "scheme.kind=$kind" --set "run.name=$kind" --set "run.out_dir=$out/gcdc-runs" "$@" >/dev/null
  "$bin" simulate configs/bench/gcdc.toml --trials 1 --set "scheme.kind=$kind" --set "run.name=$kind" --set "run.out_dir=$out/gcdc-sim" "$@" >/dev/null
  gcdc_args+=("$(ls -d "$out/gcdc-runs/$kind"-2* | head -1)" "$(ls -d "$out/gcdc-sim/$kind"-sim-* | head -1)")
done

echo "bench: 8/17 coded mat-vec: HCMM vs the baselines, decode time vs r" >&2
scripts/bench/matvec.sh "$out/matvec" > "$out/matvec.md"
echo "bench: 9/17 coded PageRank on the emulated cluster (r = 1..K-1, coded and uncoded)" >&2
scripts/bench/pagerank.sh "$out/pagerank" 2 > "$out/pagerank.md"

echo "bench: 10-11/17 networks: batch gradient vs dgemm and numpy; time to 95 % on the digits" >&2
scripts/bench/models.sh "$out" "$PY"

echo "bench: 12/17 robust decoding: screening vs the plain decode (no MPI)" >&2
{
  echo; echo "## 12. Robust decoding: screening vs the plain decode (outrun bench screen)"; echo
  echo "Medians of 9; ratios against the plain decode's combination of the same results in the same run."; echo
  for args in "" "--n 12 --s 4 --f 2"; do
    # shellcheck disable=SC2086
    "$bin" bench screen $args | $PY -c "import csv,sys
rows=list(csv.DictReader(sys.stdin))
print('| n | s | f | values | decode ms | screen ms (clean) | screen ms (one fault) | clean/decode | fault/decode |')
print('|---|---|---|---|---|---|---|---|---|')
for r in rows: print('| '+' | '.join(r[k] for k in ['n','s','f','len','decode_ms','screen_clean_ms','screen_fault_ms','clean_over_decode','fault_over_decode'])+' |')
print()"
  done
} > "$out/screen.md"

echo "bench: 13/17 every scheme vs the published gradient_coding (PEER=${PEER:-unset})" >&2
{
  echo; echo "## 13. Every scheme vs Tandon et al.'s published code (scripts/bench/peer.sh)"; echo
  if [ -n "${PEER:-}" ]; then
    "$PY" -c "import scipy, sklearn" 2>/dev/null || .venv/bin/pip install -q scipy scikit-learn
    echo "Mean ms per iteration, medians of ${PEER_PAIRS:-3} interleaved pairs; the delayed worker sleeps the same time before each result in both."; echo
    PY="$PY" scripts/bench/peer.sh "$PEER" "$out/peer" "${PEER_PAIRS:-3}" 10
  else
    echo "Skipped: give a checkout of https://github.com/rashisht1/gradient_coding as \`make bench PEER=/path/to/it\`."
  fi
  echo
} > "$out/peer.md"

echo "bench: 14/17 UMW and GC iterations vs the memory-bandwidth bound" >&2
{
  echo; echo "## 14. A gradient iteration vs the memory-bandwidth bound (scripts/bench/membound.sh)"; echo
  scripts/bench/membound.sh "$out/membound" "$out/kernel.csv" 3
} > "$out/membound.md"

echo "bench: 15/17 time to first iteration on a large LIBSVM file" >&2
{
  echo; echo "## 15. Time to first iteration on a large file (scripts/bench/startup.sh)"; echo
  scripts/bench/startup.sh "$out/startup" 3
} > "$out/startup.md"

echo "bench: 16/17 a model in Python vs the built-in network, same batch" >&2
{
  echo; echo "## 16. A model in Python vs the built-in network (scripts/bench/python.sh)"; echo
  VIRTUAL_ENV="${VIRTUAL_ENV:-$here/.venv}" scripts/bench/python.sh "$out/python" 3
} > "$out/python.md"

echo "bench: 17/17 one rank per core ($(nproc) ranks, bound): schemes vs MPI_Bcast + MPI_Gather, ring vs MPI_Allreduce" >&2
{
  echo; echo "## 17. One rank per core (scripts/bench/cores.sh)"; echo
  scripts/bench/cores.sh "$out/cores" "$(nproc)"
} > "$out/cores.md"

$PY scripts/bench/report.py "$out" > "$out/report.md"
python3 scripts/bench/gcdc.py "${gcdc_args[@]}" >> "$out/report.md"
cat "$out/matvec.md" >> "$out/report.md"
cat "$out/pagerank.md" >> "$out/report.md"
cat "$out/models.md" >> "$out/report.md"
cat "$out/screen.md" "$out/peer.md" "$out/membound.md" "$out/startup.md" "$out/python.md" "$out/cores.md" >> "$out/report.md"
cat "$out/report.md"
echo >&2
echo "bench: report in $out/report.md" >&2
