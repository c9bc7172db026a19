#!/usr/bin/env bash
# make reproduce-fl: federated learning with faulty clients (thesis ch. 7, DiverseFL) in the
# simulator's arithmetic pass (the same machines and job code as the engine; the exactness tests
# hold the two equal), from configs/fl-mnist.toml: 23 clients on non-IID shards of the MNIST
# subset, a 784-200-200-10 network, E = 1 on 10 % of a client's rows, ROUNDS rounds.
#   A. 5 faulty clients, each fault kind, every scheme;
#   B. 11 of 23 faulty (the thesis's "half"), the schemes that allow it;
#   C. label flips and stragglers (shifted exponential), rounds that use the first 18 uploads;
#   D. one DiverseFL run through mpirun (the engine), against its simulation.
# Writes docs/results/fl.md and its plots (docs/img/fl-*.png).
#   scripts/reproduce-fl.sh [ROUNDS]      (default 300)
# SECTIONS="C D" runs only those sections; OUT=DIR writes into (and reads back) an earlier output
# directory, so a section can be redone without the others.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rounds="${1:-300}"
bin="${OUTRUN_BIN:-$PWD/target/release/outrun}"
out="${OUT:-$PWD/runs/reproduce-fl-$(date -u +%Y%m%d-%H%M%S)}"
sections="${SECTIONS:-A B C D}"
has() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$out"
cfg=configs/fl-mnist.toml
half=$((rounds / 2)); late=$((rounds * 95 / 100))
common=(--math on --trials 1 --set "run.iterations=$rounds" --set "model.decay_at=[$half, $late]")
sim() { # SETTING NAME [--set ...]
  local setting="$1" name="$2"; shift 2
  "$bin" simulate "$cfg" "${common[@]}" --set "run.name=$name" --set "run.out_dir=$out/$setting" "$@" \
    > "$out/$setting-$name.txt" 2>&1 || echo "reproduce-fl: $setting $name failed (see $out/$setting-$name.txt)" >&2
}
schemes=(oracle fedavg diversefl median krum multi-krum bulyan resampling fltrust)
has A && for fault in gaussian sign-flip same-value label-flip; do
  for kind in "${schemes[@]}"; do
    echo "reproduce-fl: A $fault $kind" >&2
    sim "A-$fault" "$kind" --set "scheme.kind=$kind" --set "faults.kind=$fault"
  done
done
halfset="[1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21]"
has B && for fault in gaussian sign-flip same-value label-flip; do
  for kind in oracle fedavg diversefl median resampling fltrust; do
    echo "reproduce-fl: B $fault $kind" >&2
    sim "B-$fault" "$kind" --set "scheme.kind=$kind" --set "faults.kind=$fault" --set "faults.workers=$halfset" \
      --set scheme.byzantine=11
  done
done
strag=(--set stragglers.model=shifted-exp --set stragglers.a=1e-5 --set stragglers.mu=2e4 --set timing.compute=modelled)
has C && for kind in oracle fedavg diversefl median fltrust; do
  for wait in 23 18; do
    echo "reproduce-fl: C $kind wait $wait" >&2
    sim C "$kind-wait$wait" --set "scheme.kind=$kind" --set "scheme.wait=$wait" "${strag[@]}"
  done
done
# D: the engine (mpirun, 24 ranks on this host) on the same config, modelled compute time as in
# the simulator, and the simulator's run
if has D; then
  echo "reproduce-fl: D engine" >&2
  launch/local.sh "$cfg" --set "run.iterations=$rounds" --set "model.decay_at=[$half, $late]" --set run.name=engine \
    --set timing.compute=modelled --set "run.out_dir=$out/D" > "$out/D-engine.txt" 2>&1 \
    || echo "reproduce-fl: the engine run failed (see $out/D-engine.txt)" >&2
  sim D sim --set timing.compute=modelled
fi
mkdir -p docs/results docs/img
for fault in label-flip gaussian; do
  "$bin" report "$out/A-$fault" --out "$out/report-$fault" > /dev/null 2>&1 || true
  cp "$out/report-$fault/c1-accuracy.png" "docs/img/fl-$fault-accuracy.png" 2>/dev/null || true
done
python3 scripts/reproduce/fl_doc.py "$out" "$rounds" > docs/results/fl.md
echo "reproduce-fl: wrote docs/results/fl.md (runs in $out)" >&2
