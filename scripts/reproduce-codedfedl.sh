#!/usr/bin/env bash
# make reproduce-codedfedl: CodedFedL against naive and greedy uncoded federated gradient descent
# (thesis ch. 5, Tables 5.2 and 5.3) in simulated time — as the thesis's own results are — from
# configs/codedfedl-digits.toml: 30 clients on non-IID shards of the digits, RFF kernel
# regression, the thesis's LTE network. For each seed: naive uncoded (umw: every client), greedy
# uncoded (ignore: the fastest (1 − ψ)·30) and CodedFedL at δ = ψ = 0.1 and 0.2. Writes
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
base=configs/codedfedl-digits.toml
# one config per scheme: the [scheme] section replaced, data paths made absolute
variant() { # NAME SCHEME-LINES
  sed -e "s|\.\./data/|$here/data/|" -e '/^\[scheme\]/,/^$/d' "$base" > "$out/$1.toml"
  printf '\n[scheme]\n%b\n' "$2" >> "$out/$1.toml"
}
variant naive 'kind = "umw"\nworkers = 30'
for x in 0.1 0.2; do
  s=$(python3 -c "print(round($x * 30))")
  variant "greedy-$x" "kind = \"ignore\"\nworkers = 30\ns = $s"
  variant "codedfedl-$x" "kind = \"codedfedl\"\nworkers = 30\ndelta = $x"
done
for seed in $seeds; do
  for name in naive greedy-0.1 greedy-0.2 codedfedl-0.1 codedfedl-0.2; do
    echo "reproduce-codedfedl: seed $seed $name" >&2
    "$bin" simulate "$out/$name.toml" --math on --trials 1 --set "run.seed=$seed" --set "run.name=$name" \
      --set "run.out_dir=$out/seed-$seed" > "$out/seed-$seed-$name.txt" 2>&1 \
      || { echo "reproduce-codedfedl: seed $seed $name failed (see $out/seed-$seed-$name.txt)" >&2; exit 1; }
  done
done
"$bin" plan "$out/codedfedl-0.1.toml" > "$out/plan-0.1.txt"
"$bin" plan "$out/codedfedl-0.2.toml" > "$out/plan-0.2.txt"
python3 scripts/reproduce/codedfedl_doc.py "$out" docs/results/codedfedl.md
echo "reproduce-codedfedl: wrote docs/results/codedfedl.md (runs in $out)" >&2
