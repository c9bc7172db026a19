# Shared by scripts/reproduce-cr.sh and scripts/reproduce-upload.sh (sourced, from the project
# root): the emulated-cluster preamble.
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
