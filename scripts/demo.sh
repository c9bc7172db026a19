#!/usr/bin/env bash
# Train the default experiment once per scheme and print a comparison table.
#   scripts/demo.sh [CONFIG]   (default configs/demo.toml)
set -euo pipefail
# every MPI job is bounded in time (launch/local.sh, launch/emu-cluster honour it)
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-300}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
config="${1:-configs/demo.toml}"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="runs/demo-$(date -u +%Y%m%d-%H%M%S)"

# scheme and its overrides ("scheme.s=" removes s for schemes that wait for every worker)
schemes=(
  "umw --set scheme.s="
  "ignore"
  "gc-cyclic"
  "gc-frac"
  "rar --set scheme.s="
  "allreduce --set scheme.s="
)
echo "demo: $("$bin" plan "$config" --ranks) ranks per run; results in $out" >&2
for entry in "${schemes[@]}"; do
  # shellcheck disable=SC2086
  set -- $entry
  kind="$1"; shift
  echo "demo: running $kind ..." >&2
  launch/local.sh "$config" --set "scheme.kind=$kind" --set "run.name=$kind" --set "run.out_dir=$out" "$@" >/dev/null
done
echo
echo "Per-iteration times and errors ($out; speedup = UMW total time / scheme total time):"
echo
"$bin" report "$out" --baseline "$(ls -d "$out"/umw-* | head -1)"
