#!/usr/bin/env bash
# Install outrun's runtime dependencies on every host of a provisioned cluster and let the
# first host (which runs mpirun) ssh to the others.
#   scripts/ec2/install.sh [--state DIR] [--user admin] [--key-file KEY.pem] [--dry-run]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
parse_common "$@"
[ "${#REST[@]}" -eq 0 ] || die "install: unknown option ${REST[0]}"
[ -r "$STATE/access" ] || die "install: no $STATE/access; run scripts/ec2/provision.sh first"
SSH="$(ssh_opts)"
mapfile -t hosts < <(hosts_public)
# an intra-cluster key: mpirun on the first host starts daemons on the others over ssh
if [ ! -e "$STATE/cluster_key" ]; then
  run ssh-keygen -q -t ed25519 -N "" -C outrun-cluster -f "$STATE/cluster_key"
fi
for h in "${hosts[@]}"; do
  run rsync -az -e "$SSH" "$here/scripts/setup.sh" "$STATE/cluster_key.pub" "$h:"
  run $SSH "$h" "sudo apt-get update -qq && sudo apt-get install -y -qq rsync && sudo bash ./setup.sh && cat cluster_key.pub >> .ssh/authorized_keys"
  run $SSH "$h" "printf 'Host *\n  StrictHostKeyChecking accept-new\n' >> .ssh/config && chmod 600 .ssh/config"
done
run rsync -az -e "$SSH" "$STATE/cluster_key" "${hosts[0]}:.ssh/id_ed25519"
echo "ec2: dependencies installed on ${#hosts[@]} hosts" >&2
