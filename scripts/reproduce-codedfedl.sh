#!/usr/bin/env bash
# make reproduce-codedfedl: CodedFedL against naive and greedy uncoded federated gradient descent
# (thesis ch. 5, Tables 5.2 and 5.3) in simulated time — as the thesis's own results are — from
# configs/codedfedl-mnist.toml (the thesis's model and training on the MNIST subset) and
# configs/codedfedl-digits.toml: 30 clients on non-IID shards, RFF kernel regression, the thesis's
# LTE network. For each data set and seed: naive uncoded (umw: every client), greedy
# uncoded (ignore: the fastest (1 − ψ)·30), both on mini-batches of a fifth of the rows
# (model.batch), and CodedFedL at δ = ψ = 0.1 and 0.2 on the configs' 5 global mini-batches,
# each encoded once (scheme.batches = 5), as the thesis trains all three. Writes
# docs/results/codedfedl.md (time to each target accuracy, parity upload included, and the
# ratios beside the thesis's).
#   scripts/reproduce-codedfedl.sh [SEEDS]      (default "1 2 3 4 5")
# OUT=DIR writes into (and reads back) an earlier output directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
seeds="${1:-1 2 3 4 5}"
bin="${OUTRUN_BIN:-$PWD/target/release/outrun}"
out="${OUT:-$PWD/runs/reproduce-codedfedl-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
# one config per data set and scheme: the [scheme] section replaced, data paths made absolute
variant() { # DATA NAME SCHEME-LINES
  sed -e "s|\.\./data/|$here/data/|" -e '/^\[scheme\]/,/^$/d' "configs/codedfedl-$1.toml" > "$out/$1-$2.toml"
  printf '\n[scheme]\n%b\n' "$3" >> "$out/$1-$2.toml"
}
names="naive greedy-0.1 greedy-0.2 codedfedl-0.1 codedfedl-0.2"
for data in mnist digits; do
  # the baselines' mini-batch: a fifth of the training rows, as each of CodedFedL's 5 batches
  case $data in mnist) mb=800 ;; digits) mb=288 ;; esac
  variant "$data" naive 'kind = "umw"\nworkers = 30'
  for x in 0.1 0.2; do
    s=$(python3 -c "print(round($x * 30))")
    variant "$data" "greedy-$x" "kind = \"ignore\"\nworkers = 30\ns = $s"
    variant "$data" "codedfedl-$x" "kind = \"codedfedl\"\nworkers = 30\ndelta = $x\nbatches = 5"
  done
  for seed in $seeds; do
    for name in $names; do
      echo "reproduce-codedfedl: $data seed $seed $name" >&2
      batch=(--set "model.batch=$mb")
      [[ $name == codedfedl-* ]] && batch=()
      "$bin" simulate "$out/$data-$name.toml" --math on --trials 1 --set "run.seed=$seed" --set "run.name=$name" "${batch[@]}" \
        --set "run.out_dir=$out/$data/seed-$seed" > "$out/$data-seed-$seed-$name.txt" 2>&1 \
        || { echo "reproduce-codedfedl: $data seed $seed $name failed (see $out/$data-seed-$seed-$name.txt)" >&2; exit 1; }
    done
  done
  "$bin" plan "$out/$data-codedfedl-0.1.toml" > "$out/$data-plan-0.1.txt"
  "$bin" plan "$out/$data-codedfedl-0.2.toml" > "$out/$data-plan-0.2.txt"
done
python3 scripts/reproduce/codedfedl_doc.py "$out" docs/results/codedfedl.md
echo "reproduce-codedfedl: wrote docs/results/codedfedl.md (runs in $out)" >&2
