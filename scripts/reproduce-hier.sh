#!/usr/bin/env bash
# make reproduce-hier: hierarchical aggregation (thesis ch. 6) on the emulated cluster (needs
# root): ARC, AMC and uncoded forwarding for (n_e, n_h, s) = (12, 4, 1), (24, 6, 2), (48, 6, 1),
# one rank per host (master, helpers, clients), every host's link shaped to RATE both ways, every
# client losing s helper links per iteration (configs/hier-emu.toml). Each run is simulated with
# the same link rate; docs/results/hier.md gets bytes into the master, C_HM measured against the
# formula, and iteration times, engine beside simulator.
#   scripts/reproduce-hier.sh [RATE] [SIZES]      (defaults: 100mbit "12,4,1 24,6,2 48,6,1")
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-100mbit}"; sizes="${2:-12,4,1 24,6,2 48,6,1}"
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init hier hier
for size in $sizes; do
  IFS=, read -r ne nh s <<< "$size"
  echo "reproduce-hier: n_e = $ne, n_h = $nh, s = $s" >&2
  $emu up --hosts $((ne + nh + 1)) --bandwidth "$rate" >&2
  reproduce_burst "$out/$ne-$nh-$s.burst"
  for kind in arc amc hier-uncoded; do
    if [ "$kind" = arc ] && [ $((nh % (s + 1))) -ne 0 ]; then continue; fi
    name="$kind-$ne-$nh-$s"
    sets=(--set "scheme.kind=$kind" --set "scheme.clients=$ne" --set "scheme.helpers=$nh" --set "scheme.s=$s"
      --set "links.per_client=$s" --set "run.name=$name" --set "data.samples=$((ne * 8))")
    "$bin" plan configs/hier-emu.toml "${sets[@]}" > "$out/plan-$name.txt"
    $emu run configs/hier-emu.toml "${sets[@]}" --set "run.out_dir=$out/engine" --quiet >&2
    "$bin" simulate configs/hier-emu.toml "${sets[@]}" --trials 1 --math off --set "run.out_dir=$out/sim" \
      --set "network.bandwidth=\"$rate\"" > "$out/sim-$name.txt" 2>&1
  done
  $emu down >&2
done
mkdir -p docs/results
python3 scripts/reproduce/hier_doc.py "$out" "$rate" > docs/results/hier.md
echo "reproduce-hier: wrote docs/results/hier.md (runs in $out)" >&2
