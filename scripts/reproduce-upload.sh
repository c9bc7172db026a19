#!/usr/bin/env bash
# make reproduce-upload: eager against granted uploads (engine.upload) on the emulated cluster
# (needs root). For N = 12 (13 hosts) and N = 56 (57 hosts, the largest N this host runs with one
# rank per host; docs/clusters.md), on two kinds of links — symmetric (every link RATE both
# ways) and a fast downlink (the master sends and the workers receive at 1gbit, uploads at RATE:
# the papers' uploads-only model) — runs the sweeps configs/sweeps/upload-{12,56}.toml (CR, GC,
# ignore-stragglers, UMW × eager, granted; REPS interleaved repetitions), simulates every run's
# config with the same link model, and writes docs/results/upload.md.
#   scripts/reproduce-upload.sh [RATE] [REPS] [SIZES]      (defaults: 20mbit 2 "12 56")
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-2}"; sizes="${3:-12 56}"
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init upload upload
for n in $sizes; do
  for links in symmetric fast-down; do
    down=(); sim=()
    if [ "$links" = fast-down ]; then down=(--down 1gbit); sim=(--set network.downlink=false); fi
    echo "reproduce-upload: N = $n, $links links" >&2
    $emu up --hosts $((n + 1)) --bandwidth "$rate" "${down[@]}" >&2
    dir="$out/n$n-$links"
    mkdir -p "$dir"
    reproduce_burst "$dir/burst"
    "$bin" sweep "configs/sweeps/upload-$n.toml" --repetitions "$reps" --out "$dir" >/dev/null
    reproduce_drops "$dir/drops"
    $emu down >&2
    # the simulator's prediction for every run: its own config, the shaped rate as every NIC's
    # bandwidth (fast downlink: model messages free)
    for run in "$dir"/runs/*/; do
      name=$(basename "$run")
      "$bin" simulate "$run/config.toml" --trials 10 --math off --set "run.name=$name" --set "run.out_dir=$dir/sim" \
        --set "network.bandwidth=\"$rate\"" "${sim[@]}" > "$dir/sim-$name.txt" 2>&1
    done
  done
done
# the thesis's neural-network time model (simulated only): N = 156, t_c = 0.05 s per result
nn="$out/thesis-nn"; mkdir -p "$nn"
for kind in cr ignore gc-cyclic umw; do
  case "$kind" in
    cr) args=(--set scheme.workers= --set scheme.n=12 --set scheme.layers=2 --set scheme.s=5) ;;
    umw) args=(--set scheme.s=) ;;
    *) args=() ;;
  esac
  for mode in eager granted; do
    "$bin" simulate configs/sim/thesis-nn.toml --math off --trials 10 --set run.iterations=10 --set "scheme.kind=$kind" \
      --set "engine.upload=$mode" --set "run.name=$kind-$mode" --set "run.out_dir=$nn/runs" "${args[@]}" > "$nn/$kind-$mode.txt" 2>&1
  done
done
mkdir -p docs/results
python3 scripts/reproduce/upload_doc.py "$out" "$rate" > docs/results/upload.md
echo "reproduce-upload: wrote docs/results/upload.md (runs in $out)" >&2
