#!/usr/bin/env bash
# Installs the system packages outrun needs (Debian/Ubuntu), idempotently.
#   OpenMPI (runtime + headers), libclang (for the MPI bindings' bindgen),
#   OpenBLAS (for the mpi4py/numpy comparison in `make bench`), pkg-config, iproute2 (the
#   emulated cluster), rsync (launch/cluster.sh), fontconfig headers and a font (text in the
#   plots of `outrun report`), the Python headers and library (the embedded interpreter of
#   `[job] kind = "python"`) and venv; then the repository's .venv with numpy (what the Python
#   job's tests and examples import; launch/local.sh points the ranks at it).
# Safe to run repeatedly: it does nothing when everything is already present.
set -euo pipefail

PKGS=(openmpi-bin libopenmpi-dev libclang-dev libopenblas-dev pkg-config iproute2 rsync
      libfontconfig1-dev fonts-dejavu-core python3-dev python3-venv)

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The project's virtual environment, made by the `python3` the build embeds (same version).
venv() {
  if [ -x .venv/bin/python ] && .venv/bin/python -c "import numpy" 2>/dev/null; then
    return 0
  fi
  echo "setup: creating .venv with numpy" >&2
  python3 -m venv .venv
  .venv/bin/pip install -q numpy
}

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  venv
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing packages (${missing[*]}) and no apt-get here; install them with your package manager" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
venv
echo "setup: done" >&2
