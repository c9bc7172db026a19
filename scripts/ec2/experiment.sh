#!/usr/bin/env bash
# One experiment on EC2 from start to finish: provision, install, run, collect, terminate
# (terminating also when a step fails).
#   scripts/ec2/experiment.sh --count N --ami AMI --key NAME --key-file KEY.pem CONFIG
#       [--type t2.micro] [--slots 1] [--set section.key=value ...] [--state DIR]
#       [--user admin] [--region R] [--dry-run]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
set -- "${REST[@]+"${REST[@]}"}"
prov=() runargs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --count|--ami|--key|--type|--slots|--security-group|--placement-group|--ssh-cidr) value "$@"; prov+=("$1" "$2"); shift 2 ;;
    --set) value "$@"; runargs+=(--set "$2"); shift 2 ;;
    -*) die "experiment: unknown option $1" ;;
    *) runargs=("$1" "${runargs[@]+"${runargs[@]}"}"); shift ;;
  esac
done
common=(--state "$STATE" --user "$SSH_USER")
[ -n "$KEY_FILE" ] && common+=(--key-file "$KEY_FILE")
[ -n "$REGION" ] && common+=(--region "$REGION")
[ "$DRY" -eq 1 ] && common+=(--dry-run)
d="$(dirname "${BASH_SOURCE[0]}")"
"$d/provision.sh" "${common[@]}" "${prov[@]}"
trap '"$d/terminate.sh" "${common[@]}"' EXIT
"$d/install.sh" "${common[@]}"
"$d/run.sh" "${common[@]}" "${runargs[@]}"
