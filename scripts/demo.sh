#!/usr/bin/env bash
# Train the default experiment once per scheme (outrun sweep configs/sweeps/demo.toml) and print
# a comparison table.
#   scripts/demo.sh [CONFIG]   (default configs/demo.toml)
set -euo pipefail
# every MPI job is bounded in time (launch/local.sh, launch/emu-cluster honour it)
export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-300}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
config="${1:-configs/demo.toml}"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
out="runs/demo-$(date -u +%Y%m%d-%H%M%S)"

# one run per scheme: the sweep configs/sweeps/demo.toml (its overrides drop s for the schemes
# that wait for every worker), then the comparison table against UMW
echo "demo: $("$bin" plan "$config" --ranks) ranks per run; results in $out" >&2
"$bin" sweep configs/sweeps/demo.toml --base "$config" --out "$out" > /dev/null
echo
echo "Per-iteration times and errors ($out; speedup = UMW mean iteration time / the scheme's):"
echo
"$bin" report "$out/runs" --baseline "$(ls -d "$out"/runs/v00-kind-umw-* | head -1)"
