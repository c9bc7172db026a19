#!/usr/bin/env bash
# CodedReduce vs GC, UMW, ignore-stragglers and RAR on this host, with the same data and the
# same injected shifted-exponential delays (configs/bench/compare.toml), through outrun sweep
# (configs/sweeps/cr-bench.toml). Prints a report.
#   scripts/bench/cr.sh [OUT_DIR] [REPS]
set -euo pipefail
# every MPI job is bounded in time (launch/local.sh, launch/emu-cluster honour it)
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$here"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="${1:-runs/bench-cr-$(date -u +%Y%m%d-%H%M%S)}"
reps="${2:-3}"
# the runs are the sweep configs/sweeps/cr-bench.toml (schemes × REPS, interleaved)
"$bin" sweep configs/sweeps/cr-bench.toml --repetitions "$reps" --out "$out" >/dev/null
"$bin" report "$out/runs" --target-error 1e-3 --baseline "$(ls -d "$out"/runs/v00-kind-cr-rep1-* | head -1)"
