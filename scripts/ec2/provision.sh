#!/usr/bin/env bash
# Provision N EC2 instances for an outrun cluster and write its hostfile.
#   scripts/ec2/provision.sh --count N --ami AMI (--key NAME | --create-key) [--type t2.micro]
#       [--slots 1] [--security-group SG_ID] [--placement-group NAME] [--ssh-cidr CIDR]
#       [--no-ssh] [--state DIR] [--user admin] [--key-file KEY.pem] [--region R]
#       [--endpoint-url URL] [--dry-run]
# Checks the account's instance limit first; creates (unless given) a key pair (--create-key:
# DIR/key.pem), a security group allowing all traffic between its members and ssh from
# --ssh-cidr, and a "cluster" placement group; launches the instances, waits until they run and
# (unless --no-ssh) answer ssh, and writes DIR/instances, DIR/hostfile (private addresses, for
# mpirun; the first host, the master, gets slots=1) and DIR/access (public addresses, for ssh).
# If a step fails, everything it created is removed again (instances terminated) and one line
# says which step failed. --endpoint-url talks to an EC2 API emulator (e.g. moto_server) instead.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
set -- "${REST[@]+"${REST[@]}"}"
count="" ami="" key="" itype="t2.micro" sg="" pg="outrun-pg" cidr="0.0.0.0/0" slots=1 create_key=0 ssh_wait=1
while [ $# -gt 0 ]; do
  case "$1" in
    --count) value "$@"; count="$2"; shift 2 ;;
    --ami) value "$@"; ami="$2"; shift 2 ;;
    --key) value "$@"; key="$2"; shift 2 ;;
    --create-key) create_key=1; shift ;;
    --type) value "$@"; itype="$2"; shift 2 ;;
    --security-group) value "$@"; sg="$2"; shift 2 ;;
    --placement-group) value "$@"; pg="$2"; shift 2 ;;
    --ssh-cidr) value "$@"; cidr="$2"; shift 2 ;;
    --slots) value "$@"; slots="$2"; shift 2 ;;
    --no-ssh) ssh_wait=0; shift ;;
    *) die "provision: unknown option $1" ;;
  esac
done
[ -n "$count" ] && [ -n "$ami" ] || die "provision: --count and --ami are required"
[ -n "$key" ] || [ "$create_key" -eq 1 ] || die "provision: give --key NAME (an existing key pair) or --create-key"
[ -z "$key" ] || [ "$create_key" -eq 0 ] || die "provision: --key and --create-key exclude each other"
[[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 2 ] || die "provision: --count must be at least 2"
need_aws
mapfile -t AWS < <(aws_cmd)
mkdir -p "$STATE"
[ ! -s "$STATE/instances" ] || [ "$DRY" -eq 1 ] || die "provision: $STATE/instances exists (a cluster is up); run scripts/ec2/terminate.sh --state $STATE first"
name="outrun-$(basename "$STATE")"

# the account's instance limit, before anything is created
capture limit "20" "${AWS[@]}" ec2 describe-account-attributes --attribute-names max-instances \
  --query 'AccountAttributes[0].AttributeValues[0].AttributeValue' --output text
if [[ "$limit" =~ ^[0-9]+$ ]] && [ "$count" -gt "$limit" ]; then
  die "provision: --count $count is more than this account's limit of $limit instances (EC2 max-instances); ask AWS for a higher limit or use fewer hosts (--slots puts several ranks on a host)"
fi

# undo on failure: everything this run created, newest first
step="start" ids="" created_sg="" created_key="" created_pg=""
cleanup() {
  local rc=$?
  [ "$rc" -ne 0 ] && [ "$DRY" -eq 0 ] || return 0
  trap - EXIT
  local undone=()
  if [ -n "$ids" ]; then
    # shellcheck disable=SC2086
    "${AWS[@]}" ec2 terminate-instances --instance-ids $ids >/dev/null 2>&1 || true
    # shellcheck disable=SC2086
    "${AWS[@]}" ec2 wait instance-terminated --instance-ids $ids >/dev/null 2>&1 || true
    undone+=("terminated $(wc -w <<< "$ids") instances")
  fi
  if [ -n "$created_sg" ]; then "${AWS[@]}" ec2 delete-security-group --group-id "$created_sg" >/dev/null 2>&1 || true; undone+=("deleted security group $created_sg"); fi
  if [ -n "$created_pg" ]; then "${AWS[@]}" ec2 delete-placement-group --group-name "$created_pg" >/dev/null 2>&1 || true; fi
  if [ -n "$created_key" ]; then "${AWS[@]}" ec2 delete-key-pair --key-name "$created_key" >/dev/null 2>&1 || true; rm -f "$STATE/key.pem"; undone+=("deleted key pair $created_key"); fi
  rm -f "$STATE/instances" "$STATE/hostfile" "$STATE/access" "$STATE/created-security-group" "$STATE/created-key" "$STATE/created-placement-group"
  local what="nothing had been created"
  [ "${#undone[@]}" -eq 0 ] || what="$(printf '%s, ' "${undone[@]}")" what="${what%, }"
  echo "ec2: provision failed at: $step; $what" >&2
  exit "$rc"
}
trap cleanup EXIT

if [ "$create_key" -eq 1 ]; then
  step="create-key-pair $name"
  key="$name"
  capture material "-----DRYRUN KEY-----" "${AWS[@]}" ec2 create-key-pair --key-name "$key" --query KeyMaterial --output text
  created_key="$key"
  echo "$key" > "$STATE/created-key"
  [ "$DRY" -eq 1 ] || { (umask 077; printf '%s\n' "$material" > "$STATE/key.pem"); KEY_FILE="${KEY_FILE:-$STATE/key.pem}"; }
fi
# a "cluster" placement group (low latency between the hosts) when the API offers one: an
# existing group of that name is used, and launching goes on without one otherwise
step="create-placement-group $pg"
use_pg=0
if [ "$DRY" -eq 1 ]; then
  run "${AWS[@]}" ec2 create-placement-group --group-name "$pg" --strategy cluster
  use_pg=1
elif "${AWS[@]}" ec2 create-placement-group --group-name "$pg" --strategy cluster >/dev/null 2>&1; then
  created_pg="$pg"; use_pg=1; echo "$pg" > "$STATE/created-placement-group"
elif "${AWS[@]}" ec2 describe-placement-groups --group-names "$pg" >/dev/null 2>&1; then
  use_pg=1
else
  echo "ec2: no placement group (the API refused to create $pg); launching without one" >&2
fi
if [ -z "$sg" ]; then
  step="create-security-group $name"
  capture sg "sg-DRYRUN" "${AWS[@]}" ec2 create-security-group --group-name "$name" \
    --description "outrun cluster: all traffic inside the group, ssh from outside" --query GroupId --output text
  created_sg="$sg"
  echo "$sg" > "$STATE/created-security-group"
  step="authorize-security-group-ingress"
  run_quiet "${AWS[@]}" ec2 authorize-security-group-ingress --group-id "$sg" --protocol all --source-group "$sg"
  run_quiet "${AWS[@]}" ec2 authorize-security-group-ingress --group-id "$sg" --protocol tcp --port 22 --cidr "$cidr"
fi
step="run-instances ($count × $itype)"
placement=()
[ "$use_pg" -eq 0 ] || placement=(--placement "GroupName=$pg")
placeholder_ids="$(seq -f 'i-DRYRUN%02g' 0 $((count - 1)) | tr '\n' ' ')"
capture ids "$placeholder_ids" "${AWS[@]}" ec2 run-instances --image-id "$ami" --count "$count" --instance-type "$itype" \
  --key-name "$key" --security-group-ids "$sg" "${placement[@]}" \
  --tag-specifications "ResourceType=instance,Tags=[{Key=outrun-cluster,Value=$(basename "$STATE")}]" \
  --query 'Instances[].InstanceId' --output text
read -r -a id_list <<< "$ids"
[ "${#id_list[@]}" -eq "$count" ] || { step="run-instances: $count asked for, ${#id_list[@]} started"; false; }
printf '%s\n' "${id_list[@]}" > "$STATE/instances"
step="wait instance-running"
run "${AWS[@]}" ec2 wait instance-running --instance-ids "${id_list[@]}"
step="describe-instances"
placeholder_ips="$(for i in $(seq 0 $((count - 1))); do printf '10.0.0.%d\t203.0.113.%d\n' $((i + 10)) $((i + 10)); done)"
capture ips "$placeholder_ips" "${AWS[@]}" ec2 describe-instances --instance-ids "${id_list[@]}" \
  --query 'Reservations[].Instances[].[PrivateIpAddress,PublicIpAddress]' --output text
[ "$(wc -l <<< "$ips")" -eq "$count" ] || { step="describe-instances: addresses of $(wc -l <<< "$ips") of $count instances"; false; }
echo "$ips" | awk -v s="$slots" 'NR==1{print $1" slots=1"; next}{print $1" slots="s}' > "$STATE/hostfile"
echo "$ips" | awk '{print $2}' > "$STATE/access"
if [ "$ssh_wait" -eq 1 ]; then
  SSH="$(ssh_opts)"
  for h in $(hosts_public); do
    step="ssh to $h"
    if [ "$DRY" -eq 1 ]; then
      run $SSH "$h" true
    else
      for attempt in $(seq 60); do $SSH "$h" true 2>/dev/null && break; [ "$attempt" -lt 60 ] || { echo "ec2: $h does not answer ssh" >&2; false; }; sleep 5; done
    fi
  done
fi
trap - EXIT
echo "ec2: $count instances ready; hostfile $STATE/hostfile, ssh addresses $STATE/access" >&2
