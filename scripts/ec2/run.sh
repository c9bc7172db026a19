#!/usr/bin/env bash
# Run one experiment on a provisioned, installed cluster and gather its logs into runs/.
#   scripts/ec2/run.sh CONFIG [--set section.key=value ...] [--state DIR] [--user admin]
#       [--key-file KEY.pem] [--dry-run]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
set -- "${REST[@]+"${REST[@]}"}"
[ $# -ge 1 ] || die "usage: scripts/ec2/run.sh CONFIG [--set k=v ...]"
[ -r "$STATE/hostfile" ] && [ -r "$STATE/access" ] || die "run: no $STATE/hostfile; run scripts/ec2/provision.sh first"
dry=(); [ "$DRY" -eq 1 ] && dry=(--dry-run)
exec "$here/launch/cluster.sh" --hostfile "$STATE/hostfile" --access "$STATE/access" \
  --launch-from "$(head -1 "$STATE/access")" --ssh "$(ssh_opts)" "${dry[@]}" "$@"
