#!/usr/bin/env bash
# Terminate a cluster's instances (and the security group, placement group and key pair that
# provision.sh created).
#   scripts/ec2/terminate.sh [--state DIR] [--region R] [--endpoint-url URL] [--dry-run]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
[ "${#REST[@]}" -eq 0 ] || die "terminate: unknown option ${REST[0]}"
[ -r "$STATE/instances" ] || die "terminate: no $STATE/instances"
need_aws
mapfile -t AWS < <(aws_cmd)
mapfile -t ids < "$STATE/instances"
run_quiet "${AWS[@]}" ec2 terminate-instances --instance-ids "${ids[@]}"
run "${AWS[@]}" ec2 wait instance-terminated --instance-ids "${ids[@]}"
if [ -r "$STATE/created-security-group" ]; then
  run_quiet "${AWS[@]}" ec2 delete-security-group --group-id "$(cat "$STATE/created-security-group")"
fi
if [ -r "$STATE/created-placement-group" ]; then
  run_quiet "${AWS[@]}" ec2 delete-placement-group --group-name "$(cat "$STATE/created-placement-group")" || true
fi
if [ -r "$STATE/created-key" ]; then
  run_quiet "${AWS[@]}" ec2 delete-key-pair --key-name "$(cat "$STATE/created-key")"
fi
[ "$DRY" -eq 1 ] || rm -f "$STATE/instances" "$STATE/created-security-group" "$STATE/created-placement-group" "$STATE/created-key" "$STATE/key.pem" "$STATE/hostfile" "$STATE/access"
echo "ec2: terminated ${#ids[@]} instances" >&2
