#!/usr/bin/env bash
# make reproduce-comm-upload: communication-efficient gradient codes where the uploads decide
# (seed 001's EC2 regime: a large model, little computation; needs root). On 13 emulated hosts
# with every worker's link at RATE (default 20mbit), a model of p = 20 000 values
# (configs/reproduce/comm-upload.toml), runs UMW, GC (cyclic, fractional; s = 2), Ye-Abbe's CGC
# and CommFR-GC (systematic and Gaussian; s = 2, m = 2) under two link models:
#   uploads-only  `up --down 1gbit`: the master's link receives at RATE, the model reaches the
#                 workers at 1 Gbit/s (the papers' model: one port at the master, uploads queue);
#   server        `up --server 1gbit`: the master's host sends and receives at 1 Gbit/s, every
#                 worker at RATE both ways (seed 001's c3.8xlarge server and t2.micro workers:
#                 uploads cross their own links at once, each worker receives the model at RATE);
# REPS interleaved repetitions (default 2); simulates the uploads-only runs (the simulator's
# single-port network has no model of the server's faster NIC) and writes
# docs/results/comm-upload.md. Run by `outrun reproduce cegc-ec2` (OUTRUN_REPRODUCE_VALUES set:
# the page goes to the run directory and ours to that file; docs/ are left as they are).
#   scripts/reproduce-comm-upload.sh [RATE] [REPS] [ITERATIONS]   (defaults: 20mbit 2, the config's 20)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
rate="${1:-20mbit}"; reps="${2:-2}"
iters=(); [ -z "${3:-}" ] || iters=(--set "run.iterations=$3")
# shellcheck source=scripts/reproduce/lib.sh
. scripts/reproduce/lib.sh
reproduce_init comm-upload cupload
cfg=configs/reproduce/comm-upload.toml

schemes=(umw gc-cyclic gc-frac cgc cegc-systematic cegc-gaussian)
scheme_args() {
  case "$1" in
    umw) echo "--set scheme.kind=umw" ;;
    gc-cyclic|gc-frac) echo "--set scheme.kind=$1 --set scheme.s=2" ;;
    cgc) echo "--set scheme.kind=cgc --set scheme.s=2 --set scheme.m=2" ;;
    cegc-*) echo "--set scheme.kind=cegc --set scheme.code=${1#cegc-} --set scheme.s=2 --set scheme.m=2" ;;
  esac
}
links_args() {
  case "$1" in
    uploads-only) echo "--down 1gbit" ;;
    server) echo "--server 1gbit" ;;
  esac
}
# validate every run before bringing anything up
for label in "${schemes[@]}"; do
  # shellcheck disable=SC2046
  "$bin" check "$cfg" $(scheme_args "$label") "${iters[@]}" >/dev/null
done

for links in uploads-only server; do
  echo "reproduce-comm-upload: $links links" >&2
  # shellcheck disable=SC2046
  $emu up --hosts 13 --bandwidth "$rate" $(links_args "$links") >&2
  $emu link h1 h2 10 > "$out/$links.link" || true
  reproduce_burst "$out/$links.burst"
  for rep in $(seq "$reps"); do
    for label in "${schemes[@]}"; do
      echo "reproduce-comm-upload: $links, rep $rep/$reps: $label" >&2
      # shellcheck disable=SC2046
      $emu run "$cfg" $(scheme_args "$label") "${iters[@]}" --set "run.name=$links-$label-r$rep" --set "run.out_dir=$out/runs" >/dev/null
    done
  done
  reproduce_drops "$out/$links.drops"
  $emu down >&2
done

# the simulator's prediction of the uploads-only runs: RATE as every NIC's rate, model messages
# free (downlink = false: they cross at 1 Gbit/s on the cluster, 1.3 ms each)
for label in "${schemes[@]}"; do
  # shellcheck disable=SC2046
  "$bin" simulate "$cfg" --trials 3 --math off $(scheme_args "$label") "${iters[@]}" --set "run.name=$label" \
    --set "run.out_dir=$out/sim" --set "network.bandwidth=\"$rate\"" --set network.downlink=false \
    > "$out/sim-$label.txt" 2>&1
done

page=docs/results/comm-upload.md
[ -z "${OUTRUN_REPRODUCE_VALUES:-}" ] || page="$out/comm-upload.md"
mkdir -p "$(dirname "$page")"
python3 scripts/reproduce/comm_upload_doc.py "$out" "$rate" > "$page"
echo "reproduce-comm-upload: wrote $page (runs in $out)" >&2
