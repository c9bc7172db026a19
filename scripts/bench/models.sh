#!/usr/bin/env bash
# make bench §10 and §11, appended to the bench report by scripts/bench.sh:
#   10. a softmax network's batch gradient vs the dgemm calls it makes (same shapes, one thread)
#       and vs the same computation in numpy and, if it is installed, PyTorch
#   11. time to a test accuracy on the ten digits: UMW, GC, ignore-stragglers and CodedReduce
#       under the same injected stragglers (configs/bench/mlp-digits-12.toml)
#
#   scripts/bench/models.sh OUT_DIR PYTHON     writes OUT_DIR/models.md
set -euo pipefail
out="$1"; PY="$2"
bin="${OUTRUN_BIN:-target/release/outrun}"
export OPENBLAS_NUM_THREADS=1

torch=0
if "$PY" -c "import torch" 2>/dev/null; then torch=1; fi
{
  echo "## 10. Network batch gradient vs dgemm, numpy and PyTorch (one thread)"
  echo
  echo "| network | batch | GFLOP | outrun ms | outrun GFLOP/s | dgemm alone GFLOP/s | outrun / dgemm | numpy ms | outrun speed / numpy | PyTorch ms | outrun speed / PyTorch |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} > "$out/models.md"
for sizes in 784,200,200,10 64,128,10; do
  "$bin" bench mlp --sizes "$sizes" --batches 64,256,1024 | tail -n +2 > "$out/mlp-$sizes.csv"
  "$PY" scripts/bench/mlp_numpy.py "$sizes" 64,256,1024 20 > "$out/mlp-numpy-$sizes.csv"
  if [ "$torch" = 1 ]; then
    "$PY" scripts/bench/mlp_torch.py "$sizes" 64,256,1024 20 > "$out/mlp-torch-$sizes.csv"
  else
    # one placeholder line per batch, the network named as the other CSVs name it (a-b-c)
    printf '%s,-,nan,nan\n' "${sizes//,/-}" "${sizes//,/-}" "${sizes//,/-}" > "$out/mlp-torch-$sizes.csv"
  fi
  paste -d, "$out/mlp-$sizes.csv" "$out/mlp-numpy-$sizes.csv" "$out/mlp-torch-$sizes.csv" | awk -F, '{
    t = ($15 == "nan") ? "not installed | -" : sprintf("%.3f | %.2f", $15, $15 / $4)
    printf "| %s | %s | %.4f | %.3f | %.1f | %.1f | %.2f | %.3f | %.2f | %s |\n", $1, $2, $3, $4, $5, $7, $8, $11, $11 / $4, t }' >> "$out/models.md"
done
if [ "$torch" = 0 ]; then
  echo "(PyTorch is not in $PY: \`$PY -m pip install torch\` to measure it.)" >> "$out/models.md"
fi

{
  echo
  echo "## 11. Time to a test accuracy on the ten digits (configs/bench/mlp-digits-12.toml)"
  echo
  echo "| scheme | time to 95 % (s) | iterations to 95 % | final accuracy | run time (s) | exact iterations |"
  echo "|---|---|---|---|---|---|"
} >> "$out/models.md"
runs="$out/accuracy-runs"
for entry in "umw --set scheme.s=" "gc-cyclic" "ignore" "cr --set scheme.workers= --set scheme.n=3 --set scheme.layers=2 --set scheme.s=1"; do
  # shellcheck disable=SC2086
  set -- $entry; kind="$1"; shift
  launch/local.sh configs/bench/mlp-digits-12.toml --set "scheme.kind=$kind" --set "run.out_dir=$runs" "$@" --quiet >/dev/null
  d=$(ls -td "$runs"/mlp-digits-12-* | head -1)
  "$PY" - "$d" "$kind" >> "$out/models.md" <<'PYEOF'
import csv, json, sys
d, kind = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(f"{d}/iterations.csv")))
s = json.load(open(f"{d}/summary.json"))
hit = next((r for r in rows if r["test_accuracy"] and float(r["test_accuracy"]) >= 0.95), None)
t = f"{float(hit['cumulative_s']):.3f}" if hit else "not reached"
i = str(int(hit["iteration"]) + 1) if hit else "-"
total = float(rows[-1]["cumulative_s"])
print(f"| {kind} | {t} | {i} | {100 * s['final_test_accuracy']:.1f} % | {total:.3f} | {s['exact_iterations']} of {len(rows)} |")
PYEOF
done
"$bin" report "$runs" --out "$out/accuracy-report" >/dev/null 2>&1
echo >> "$out/models.md"
echo "Accuracy against time and iterations: $out/accuracy-report/c1-accuracy.png" >> "$out/models.md"
