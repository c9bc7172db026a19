#!/usr/bin/env bash
# Run one experiment on this machine:
#   launch/local.sh configs/<experiment>.toml [--set section.key=value ...] [--quiet] [--resume RUN_DIR]
# Computes the number of MPI ranks from the config (outrun plan --ranks), validates the config
# before MPI starts, and runs mpirun with oversubscription (one rank per slot, no core binding).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"

usage="usage: launch/local.sh CONFIG [--set section.key=value ...] [--quiet] [--resume RUN_DIR]"
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  cat <<HELP
$usage

Runs one experiment on this machine: checks the config (one line and exit 2 for bad input,
before MPI starts), asks it how many MPI ranks it needs, and runs them under mpirun (one rank
per slot, oversubscribed, no core binding). The run directory is printed at the end.

  --set section.key=value   override a config key (repeatable)
  --quiet                   no progress lines from rank 0
  --resume RUN_DIR          go on from RUN_DIR's checkpoint.json (run.checkpoint_every)

Environment:
  OUTRUN_BIN            the outrun binary (default: target/release/outrun of this repository)
  OUTRUN_TIMEOUT        seconds the whole launch may take, the check included (default:
                        120 s + iterations × run.deadline); past it the job is stopped, exit 124
  OUTRUN_MPIRUN_FLAGS   extra mpirun flags (e.g. "--bind-to core" where each rank has a core)
  OUTRUN_MPI_VERBOSE    1: show mpirun's own output unfiltered (its abort reports included)
  VIRTUAL_ENV           the Python environment a [job] kind = "python" module imports from
                        (default: this repository's .venv, made by scripts/setup.sh)
  OMP_NUM_THREADS       threads per rank for a Python model's libraries (default 1)
HELP
  exit 0
fi
if [ $# -lt 1 ]; then
  echo "$usage (--help for more)" >&2
  exit 2
fi
config="$1"; shift
# shellcheck source=launch/lib.sh
. "$here/launch/lib.sh"
split_train_only "$@"; set -- "${ARGS[@]}"
export_terminal

if [ ! -x "$bin" ]; then
  echo "launch: $bin not found; run 'make build' first (or set OUTRUN_BIN)" >&2
  exit 2
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "launch: mpirun not found; run 'make setup' (installs OpenMPI)" >&2
  exit 2
fi

# A Python model (`[job] kind = "python"`) imports from the active virtual environment, or the
# repository's .venv (scripts/setup.sh makes it, with numpy).
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x "$here/.venv/bin/python" ]; then
  export VIRTUAL_ENV="$here/.venv"
fi
# Validate before MPI starts: a bad config or data file fails here with one line. OUTRUN_TIMEOUT
# bounds the whole launch, this check included (a Python model's probe is also bounded by
# run.deadline in outrun itself).
started=$SECONDS
if [ -n "${OUTRUN_TIMEOUT:-}" ]; then
  rc=0
  OUTRUN_LAUNCHER=launch/local.sh timeout --kill-after=5 "$OUTRUN_TIMEOUT" "$bin" check --local "$config" "$@" >/dev/null || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "launch: outrun check did not end within OUTRUN_TIMEOUT = ${OUTRUN_TIMEOUT} s and was stopped" >&2
    exit 124
  fi
  [ "$rc" -eq 0 ] || exit "$rc"
else
  OUTRUN_LAUNCHER=launch/local.sh "$bin" check --local "$config" "$@" >/dev/null
fi
np="$("$bin" plan "$config" --ranks "$@")"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Many ranks on few cores: let idle ranks yield.
export OMPI_MCA_mpi_yield_when_idle=1
# libevent's epoll backend prints "[warn] Epoll MOD(1) on fd N failed ... Bad file descriptor"
# when mpirun kills ranks it still has writes queued for after an abort (open-mpi/ompi #2004,
# #5520); its poll backend has no such race. One BLAS (and OpenMP: PyTorch) thread per rank: the
# cores are shared.
export EVENT_NOEPOLL=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# The job is bounded (OUTRUN_TIMEOUT=SECONDS, or by default 120 s + iterations × run.deadline),
# Ctrl-C stops it, and a rank killed by a signal is reported in one line (launch/lib.sh).
bound_said=""
if [ -n "${OUTRUN_TIMEOUT:-}" ]; then
  # what the check left of the bound (at least a second)
  bound=$(( ${OUTRUN_TIMEOUT%.*} - (SECONDS - started) ))
  [ "$bound" -ge 1 ] || bound=1
  # a job stopped at the bound is reported with the bound the user set, the check included
  bound_said="${OUTRUN_TIMEOUT%.*}"
else
  bound="$("$bin" plan "$config" --job-bound "$@")"
fi
# shellcheck disable=SC2086
run_mpi_job "$bound" mpirun --oversubscribe --bind-to none --map-by slot -np "$np" \
  --mca btl self,vader,tcp --mca btl_base_warn_component_unused 0 \
  ${OUTRUN_MPIRUN_FLAGS:-} "$bin" train "$config" "$@" "${TRAIN_ONLY[@]}"
