#!/usr/bin/env bash
# A gradient iteration against the memory-bandwidth bound (issue 31): UMW and cyclic GC on a
# 10 000 × 1 000 logistic-regression set (10 workers + master on this host, real compute times,
# 100 iterations), each run REPS times (default 3). The bound is the bytes the workers read per
# iteration ((s + 1) × the data: each part is held by s + 1 workers) over this host's aggregate
# read bandwidth (`outrun bench kernel`'s read_all_gb_s, all cores reading at once).
#   scripts/bench/membound.sh OUT_DIR KERNEL_CSV [REPS]     prints the markdown table
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ $# -lt 2 ]; then
  echo "usage: scripts/bench/membound.sh OUT_DIR KERNEL_CSV [REPS]" >&2
  exit 2
fi
out="$1"; kernel_csv="$2"; reps="${3:-3}"
mkdir -p "$out"
d=10000 p=1000
echo "scheme,s,rep,mean_s" > "$out/membound.csv"
for entry in "umw 0" "gc-cyclic 1" "gc-cyclic 2"; do
  read -r kind s <<< "$entry"
  s_set=(--set "scheme.s=$s"); [ "$kind" = umw ] && s_set=(--set scheme.s=)
  for rep in $(seq "$reps"); do
    "$here/launch/local.sh" "$here/configs/bench/peer.toml" --set 'data.kind="logistic-synthetic"' --set data.path= \
      --set "data.samples=$d" --set "data.features=$p" --set "run.out_dir=\"$out/runs\"" \
      --set "scheme.kind=\"$kind\"" "${s_set[@]}" --quiet >/dev/null
    run_dir=$(ls -td "$out"/runs/peer-* | head -1)
    echo "$kind,$s,$rep,$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['mean_s'])" "$run_dir/summary.json")" >> "$out/membound.csv"
  done
done
python3 - "$out/membound.csv" "$kernel_csv" $d $p <<'PY'
import csv, statistics, sys
runs, kernel, d, p = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
k = [r for r in csv.DictReader(open(kernel)) if r["loss"] == "logistic"][0]
bw = float(k["read_all_gb_s"]) * 1e9
rows = list(csv.DictReader(open(runs)))
print(f"{d} × {p} logistic regression, 10 workers + master, 100 iterations, real compute times; "
      f"aggregate read bandwidth {bw / 1e9:.1f} GB/s ({k['cores']} cores reading at once; "
      f"one core {k['read_gb_s']} GB/s, the kernel on one core {k['kernel_gb_s']} GB/s).\n")
print("| scheme | bytes read per iteration | bound ms | measured ms (median) | runs | measured/bound | target ≤ 1.2× |")
print("|---|---|---|---|---|---|---|")
for kind, s in [("umw", "0"), ("gc-cyclic", "1"), ("gc-cyclic", "2")]:
    sel = [float(r["mean_s"]) for r in rows if r["scheme"] == kind and r["s"] == s]
    nbytes = (int(s) + 1) * d * p * 8
    bound, med = nbytes / bw, statistics.median(sel)
    name = kind if kind == "umw" else f"{kind} s={s}"
    print(f"| {name} | {nbytes / 1e6:.0f} MB | {bound * 1e3:.2f} | {med * 1e3:.2f} | "
          f"{' '.join('%.2f' % (v * 1e3) for v in sel)} | {med / bound:.2f}× | {'met' if med / bound <= 1.2 else 'missed'} |")
print()
PY
