#!/usr/bin/env bash
# Terminate a cluster's instances (and the security group provision.sh created).
#   scripts/ec2/terminate.sh [--state DIR] [--region R] [--dry-run]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
[ "${#REST[@]}" -eq 0 ] || die "terminate: unknown option ${REST[0]}"
[ -r "$STATE/instances" ] || die "terminate: no $STATE/instances"
need_aws
mapfile -t AWS < <(aws_cmd)
mapfile -t ids < "$STATE/instances"
run "${AWS[@]}" ec2 terminate-instances --instance-ids "${ids[@]}"
run "${AWS[@]}" ec2 wait instance-terminated --instance-ids "${ids[@]}"
if [ -r "$STATE/created-security-group" ]; then
  run "${AWS[@]}" ec2 delete-security-group --group-id "$(cat "$STATE/created-security-group")"
fi
[ "$DRY" -eq 1 ] || rm -f "$STATE/instances" "$STATE/created-security-group"
echo "ec2: terminated ${#ids[@]} instances" >&2
