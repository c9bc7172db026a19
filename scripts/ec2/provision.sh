#!/usr/bin/env bash
# Provision N EC2 instances for an outrun cluster and write its hostfile.
#   scripts/ec2/provision.sh --count N --ami AMI --key NAME [--type t2.micro] [--slots 1]
#       [--security-group SG_ID] [--placement-group NAME] [--ssh-cidr CIDR]
#       [--state DIR] [--user admin] [--key-file KEY.pem] [--region R] [--dry-run]
# Creates (unless given) a security group allowing all traffic between its members and ssh
# from --ssh-cidr, and a "cluster" placement group; launches the instances, waits until they
# run and answer ssh, and writes DIR/instances, DIR/hostfile (private addresses, for mpirun;
# the first host, the master, gets slots=1) and DIR/access (public addresses, for ssh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
set -- "${REST[@]+"${REST[@]}"}"
count="" ami="" key="" itype="t2.micro" sg="" pg="outrun-pg" cidr="0.0.0.0/0" slots=1
while [ $# -gt 0 ]; do
  case "$1" in
    --count) count="$2"; shift 2 ;;
    --ami) ami="$2"; shift 2 ;;
    --key) key="$2"; shift 2 ;;
    --type) itype="$2"; shift 2 ;;
    --security-group) sg="$2"; shift 2 ;;
    --placement-group) pg="$2"; shift 2 ;;
    --ssh-cidr) cidr="$2"; shift 2 ;;
    --slots) slots="$2"; shift 2 ;;
    *) die "provision: unknown option $1" ;;
  esac
done
[ -n "$count" ] && [ -n "$ami" ] && [ -n "$key" ] || die "provision: --count, --ami and --key are required"
[[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 2 ] || die "provision: --count must be at least 2"
need_aws
mapfile -t AWS < <(aws_cmd)
mkdir -p "$STATE"

run "${AWS[@]}" ec2 create-placement-group --group-name "$pg" --strategy cluster || true
if [ -z "$sg" ]; then
  capture sg "sg-DRYRUN" "${AWS[@]}" ec2 create-security-group --group-name "outrun-$(basename "$STATE")" \
    --description "outrun cluster: all traffic inside the group, ssh from outside" --query GroupId --output text
  run "${AWS[@]}" ec2 authorize-security-group-ingress --group-id "$sg" --protocol all --source-group "$sg"
  run "${AWS[@]}" ec2 authorize-security-group-ingress --group-id "$sg" --protocol tcp --port 22 --cidr "$cidr"
  echo "$sg" > "$STATE/created-security-group"
fi
placeholder_ids="$(seq -f 'i-DRYRUN%02g' 0 $((count - 1)) | tr '\n' ' ')"
capture ids "$placeholder_ids" "${AWS[@]}" ec2 run-instances --image-id "$ami" --count "$count" --instance-type "$itype" \
  --key-name "$key" --security-group-ids "$sg" --placement "GroupName=$pg" \
  --tag-specifications "ResourceType=instance,Tags=[{Key=outrun-cluster,Value=$(basename "$STATE")}]" \
  --query 'Instances[].InstanceId' --output text
read -r -a id_list <<< "$ids"
printf '%s\n' "${id_list[@]}" > "$STATE/instances"
run "${AWS[@]}" ec2 wait instance-running --instance-ids "${id_list[@]}"
placeholder_ips="$(for i in $(seq 0 $((count - 1))); do printf '10.0.0.%d\t203.0.113.%d\n' $((i + 10)) $((i + 10)); done)"
capture ips "$placeholder_ips" "${AWS[@]}" ec2 describe-instances --instance-ids "${id_list[@]}" \
  --query 'Reservations[].Instances[].[PrivateIpAddress,PublicIpAddress]' --output text
echo "$ips" | awk -v s="$slots" 'NR==1{print $1" slots=1"; next}{print $1" slots="s}' > "$STATE/hostfile"
echo "$ips" | awk '{print $2}' > "$STATE/access"
SSH="$(ssh_opts)"
for h in $(hosts_public); do
  if [ "$DRY" -eq 1 ]; then
    run $SSH "$h" true
  else
    for attempt in $(seq 60); do $SSH "$h" true 2>/dev/null && break; [ "$attempt" -lt 60 ] || die "$h does not answer ssh"; sleep 5; done
  fi
done
echo "ec2: $count instances ready; hostfile $STATE/hostfile, ssh addresses $STATE/access" >&2
