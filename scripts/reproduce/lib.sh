# Shared by the emulated-cluster reproductions (sourced, from the project root): the preamble
# and the simulator beside a sweep's runs.
#   reproduce_init NAME CLUSTER
# sets bin (OUTRUN_BIN or target/release/outrun), out (runs/reproduce-NAME-<UTC time>, created)
# and emu; bounds every MPI job (OUTRUN_TIMEOUT, default 600 s); refuses to run without root;
# tears down any emulated cluster named CLUSTER now and when the script exits.
reproduce_init() {
  local name="$1"
  export OUTRUN_TIMEOUT="${OUTRUN_TIMEOUT:-600}"
  bin="${OUTRUN_BIN:-$PWD/target/release/outrun}"
  out="runs/reproduce-$name-$(date -u +%Y%m%d-%H%M%S)"
  export OUTRUN_EMU_CLUSTER="$2"
  emu=launch/emu-cluster
  [ "$(id -u)" -eq 0 ] || { echo "reproduce-$name: needs root (network namespaces); run it with sudo" >&2; exit 2; }
  $emu down >/dev/null 2>&1 || true
  trap '$emu down >/dev/null 2>&1 || true' EXIT
  mkdir -p "$out"
}

# The packets the emulated cluster's links dropped so far, summed over its hosts, into FILE:
# "SENT RECEIVED" (before `$emu down`, which takes the counters with it).
reproduce_drops() {
  $emu drops | awk '{e+=$3; i+=$5} END {print e+0, i+0}' > "$1"
}

# The cluster's tbf burst in bytes (its worker links': what an idle link sends at once) into FILE.
reproduce_burst() {
  $emu status | sed -n 's/.*tbf burst \([0-9]*\) B.*/\1/p' > "$1"
}

# The simulator's prediction for each variant of the sweep in DIR: its first repetition's own
# config, RATE as every NIC's bandwidth, the engine's semantics (model messages cost time, eager
# uploads, held messages); 20 trials each, into DIR/sim.
simulate_first_runs() {
  local dir="$1" rate="$2" run
  for run in "$dir"/runs/*-rep1-*/; do
    "$bin" simulate "$run/config.toml" --trials 20 --math off --set "run.name=$(basename "$run")" \
      --set "run.out_dir=$dir/sim" --set "network.bandwidth=\"$rate\"" >/dev/null
  done
}
