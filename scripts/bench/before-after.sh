#!/usr/bin/env bash
# Sections 2 and 3 of `make bench` for two builds in one invocation, interleaved (before, after,
# after, before, ...), so that a change's effect on the ring's ratio to MPI_Allreduce and on the
# engine's per-iteration overhead is measured against the build before it, on the same machine
# at the same time.
#
#   scripts/bench/before-after.sh BEFORE_BIN AFTER_BIN [REPETITIONS]
#
# e.g. git worktree add /tmp/before HEAD~5 && (cd /tmp/before && cargo build --release) &&
#      scripts/bench/before-after.sh /tmp/before/target/release/outrun target/release/outrun
# A third section runs the same overhead config one rank per core (ranks = this host's cores,
# each bound to one, engine.idle = "spin" for both builds): UMW with ranks - 1 workers and the
# allreduce scheme with ranks workers, median iteration of each run.
# Writes runs/before-after-<UTC time>/{ring.csv,overhead.csv,bound.csv,report.md} and prints
# report.md.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BEFORE_BIN AFTER_BIN [REPETITIONS]" >&2; exit 2; }
before=$(readlink -f "$1")
after=$(readlink -f "$2")
reps="${3:-3}"
for b in "$before" "$after"; do
  [ -x "$b" ] || { echo "before-after: $b is not an executable" >&2; exit 2; }
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$here"
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 EVENT_NOEPOLL=1 OPENBLAS_NUM_THREADS=1
MPIRUN=(timeout --kill-after=10 "$OUTRUN_TIMEOUT" mpirun --quiet --oversubscribe --bind-to none --mca btl self,vader,tcp --mca btl_base_warn_component_unused 0)
out="runs/before-after-$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$out"

# the ring schedule's rows as ranks,bytes,reps,ring_s,...: builds with --algorithms print an
# algorithm column, older ones time the ring only
ring_rows() {
  if "$1" bench ring --help | grep -q -- --algorithms; then
    "${MPIRUN[@]}" -np 8 "$1" bench ring --algorithms ring --rounds 5 --seconds 0.5 | tail -n +2 | cut -d, -f1,2,4-
  else
    "${MPIRUN[@]}" -np 8 "$1" bench ring --rounds 5 --seconds 0.5 | tail -n +2
  fi
}

echo "build,rep,ranks,bytes,reps,ring_s,mpi_allreduce_s,ratio,agree" > "$out/ring.csv"
echo "build,rep,scheme,mean_s" > "$out/overhead.csv"
echo "build,rep,scheme,median_s" > "$out/bound.csv"
cores=$(nproc)
for rep in $(seq "$reps"); do
  # odd repetitions run the before build first, even ones the after build: on this VM the second
  # of two back-to-back runs of the same binary was the slower in 5 of 6 pairs (12 ranks on 2
  # cores, by 8 % in the median pair), so a fixed order would be charged to the change
  order="before after"; [ $((rep % 2)) -eq 0 ] && order="after before"
  for build in $order; do
    bin=$before; [ "$build" = after ] && bin=$after
    echo "before-after: repetition $rep/$reps, $build: ring vs MPI_Allreduce (8 ranks)" >&2
    ring_rows "$bin" | sed "s/^/$build,$rep,/" >> "$out/ring.csv"
    echo "before-after: repetition $rep/$reps, $build: engine overhead per scheme (N = 12, p = 5000)" >&2
    for entry in "umw --set scheme.s=" "ignore" "gc-cyclic" "gc-frac" "rar --set scheme.s=" "allreduce --set scheme.s="; do
      # shellcheck disable=SC2086
      set -- $entry; kind="$1"; shift
      runs="$out/overhead-runs/$build"
      OUTRUN_BIN="$bin" launch/local.sh configs/bench/overhead.toml --set "scheme.kind=$kind" --set "run.out_dir=$runs" "$@" >/dev/null
      d=$(ls -td "$runs"/overhead-* | head -1)
      echo "$build,$rep,$kind,$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_s'])" "$d/summary.json")" >> "$out/overhead.csv"
    done
    [ "$cores" -ge 2 ] || continue
    echo "before-after: repetition $rep/$reps, $build: one rank per core ($cores ranks, bound)" >&2
    for entry in "umw $((cores - 1))" "allreduce $cores"; do
      # shellcheck disable=SC2086
      set -- $entry
      runs="$out/bound-runs/$build"
      OUTRUN_BIN="$bin" OUTRUN_MPIRUN_FLAGS="--bind-to core" launch/local.sh configs/bench/overhead.toml \
        --set "scheme.kind=$1" --set scheme.s= --set "scheme.workers=$2" --set "data.samples=$((2 * $2))" \
        --set run.iterations=2000 --set engine.idle=spin --set "run.out_dir=$runs" >/dev/null
      d=$(ls -td "$runs"/overhead-* | head -1)
      echo "$build,$rep,$1,$(python3 -c "import csv,statistics,sys; print(statistics.median(float(r['wall_s']) for r in csv.DictReader(open(sys.argv[1]))))" "$d/iterations.csv")" >> "$out/bound.csv"
    done
  done
done

python3 - "$out" "$before" "$after" "$reps" > "$out/report.md" <<'EOF'
import csv, statistics, sys
out, before, after, reps = sys.argv[1:]
med = statistics.median
ring = list(csv.DictReader(open(f"{out}/ring.csv")))
over = list(csv.DictReader(open(f"{out}/overhead.csv")))
print(f"# Before and after, one invocation ({reps} repetitions each, interleaved)\n")
print(f"- before: `{before}`\n- after: `{after}`\n")
print("## Ring all-reduce vs MPI_Allreduce (8 ranks; median of the repetitions' ratios)\n")
print("| vector | ratio before | ratio after | ring ms before | ring ms after | all agree |")
print("|---|---|---|---|---|---|")
for size in sorted({int(r["bytes"]) for r in ring}):
    pick = lambda b, k: [float(r[k]) for r in ring if r["build"] == b and int(r["bytes"]) == size]
    agree = all(r["agree"] == "true" for r in ring if int(r["bytes"]) == size)
    label = f"{size // 1024} KB" if size < 1 << 20 else f"{size >> 20} MB"
    print(f"| {label} | {med(pick('before', 'ratio')):.2f} | {med(pick('after', 'ratio')):.2f} | "
          f"{1e3 * med(pick('before', 'ring_s')):.3f} | {1e3 * med(pick('after', 'ring_s')):.3f} | {agree} |")
def per_scheme(title, rows, column):
    print(f"\n## {title}\n")
    print("| scheme | ms before | ms after | after / before |")
    print("|---|---|---|---|")
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        pick = lambda b: med([float(r[column]) for r in rows if r["build"] == b and r["scheme"] == scheme])
        b, a = pick("before"), pick("after")
        print(f"| {scheme} | {1e3 * b:.3f} | {1e3 * a:.3f} | {a / b:.2f} |")
per_scheme("Engine overhead per iteration (N = 12, p = 5000; median of the repetitions)", over, "mean_s")
bound = list(csv.DictReader(open(f"{out}/bound.csv")))
if bound:
    per_scheme("One rank per core, bound, engine.idle = spin (2000 iterations; median iteration, median of the repetitions)", bound, "median_s")
EOF
cat "$out/report.md"
echo "before-after: report in $out/report.md" >&2
