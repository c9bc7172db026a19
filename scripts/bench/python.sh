#!/usr/bin/env bash
# A Python model's per-iteration overhead over the built-in network on the same batch (issue 32;
# make bench §16): the 64-128-10 softmax network of configs/bench/python.toml, one worker and
# the master (two ranks), real compute, 60 iterations; the NumPy module
# (examples/python/mlp_numpy.py) and, where PyTorch imports, the PyTorch one (mlp_torch.py),
# each against the built-in twin in interleaved pairs (default 3) for b = 64 … 4096. The figure
# is the median iteration (summary.json's median_s: the first call's imports are not an
# iteration's cost). Prints the markdown table; raw CSV in OUT_DIR.
#   scripts/bench/python.sh OUT_DIR [PAIRS]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: scripts/bench/python.sh OUT_DIR [PAIRS]" >&2
  exit 2
fi
out="$1"; pairs="${2:-3}"
mkdir -p "$out"
venv="${VIRTUAL_ENV:-$here/.venv}"
modules=(mlp_numpy)
if "$venv/bin/python" -c "import torch" 2>/dev/null; then
  modules+=(mlp_torch)
fi
cfg="$here/configs/bench/python.toml"
median() {
  local run_dir
  run_dir=$(ls -td "$out"/runs/bench-python-* | head -1)
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['median_s'])" "$run_dir/summary.json"
}
echo "module,batch,pair,python_s,built_in_s" > "$out/python.csv"
for m in "${modules[@]}"; do
  for b in 64 256 1024 4096; do
    for pair in $(seq "$pairs"); do
      common=(--set "model.batch=$b" --set "run.out_dir=\"$out/runs\"" --quiet)
      "$here/launch/local.sh" "$cfg" --set "job.module=\"$here/examples/python/$m.py\"" "${common[@]}" >/dev/null
      py=$(median)
      "$here/launch/local.sh" "$cfg" --set job.kind=gd --set job.module= --set job.options= \
        --set "model.hidden=[128]" "${common[@]}" >/dev/null
      echo "$m,$b,$pair,$py,$(median)" >> "$out/python.csv"
    done
  done
done
python3 - "$out/python.csv" "${modules[*]}" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("64-128-10 softmax network on synthetic rows, 1 worker + master, real compute, median iteration "
      "of 60; medians of the interleaved pairs. Target: the Python job's iteration ≤ 1.10× the "
      "built-in's from b = 256.\n")
print("| module | b | built-in ms | Python ms | Python/built-in | target ≤ 1.10× (b ≥ 256) |")
print("|---|---|---|---|---|---|")
for m in sys.argv[2].split():
    for b in ["64", "256", "1024", "4096"]:
        sel = [r for r in rows if r["module"] == m and r["batch"] == b]
        py = statistics.median(float(r["python_s"]) for r in sel)
        rs = statistics.median(float(r["built_in_s"]) for r in sel)
        verdict = "—" if b == "64" else ("met" if py / rs <= 1.10 else "missed")
        print(f"| {m}.py | {b} | {rs * 1e3:.3f} | {py * 1e3:.3f} | {py / rs:.2f}× | {verdict} |")
if "mlp_torch" not in sys.argv[2]:
    print("\nPyTorch does not import in the environment the ranks use: mlp_torch.py not measured "
          "(`.venv/bin/pip install torch`).")
print()
PY
