#!/usr/bin/env bash
# The architecture's rooms, checked over the source (make lint): scripts/structure.py says what.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! out=$(python3 scripts/structure.py); then
  printf '%s\n' "$out" >&2
  echo "structure: the rooms above do not hold (docs/architecture.md, \"Rooms\")" >&2
  exit 1
fi
