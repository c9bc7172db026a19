# Shared by the scripts in scripts/ec2/ (sourced, not run).
# Every script accepts --dry-run: it then prints the aws / ssh / rsync commands it would run,
# one per line, and uses placeholder ids and addresses where a real run would read AWS's answers.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DRY=0
STATE="ec2-cluster"
SSH_USER="admin"
KEY_FILE=""
REGION=""
ENDPOINT=""

die() { echo "ec2: $*" >&2; exit 2; }
# an option that takes a value is given one (under set -u, a missing "$2" was a shell error)
value() { [ $# -ge 2 ] || die "$1 needs a value"; }

# print (dry run) or run a command
run() {
  if [ "$DRY" -eq 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi
}

# the same, without the command's own output (a real run's JSON answers)
run_quiet() {
  if [ "$DRY" -eq 1 ]; then printf '%q ' "$@"; echo; else "$@" >/dev/null; fi
}

# capture VAR PLACEHOLDER cmd...: VAR = the command's output, or PLACEHOLDER in a dry run
capture() {
  local var="$1" placeholder="$2"; shift 2
  if [ "$DRY" -eq 1 ]; then
    printf '%q ' "$@"; echo
    printf -v "$var" '%s' "$placeholder"
  else
    local out
    out="$("$@")" || return
    printf -v "$var" '%s' "$out"
  fi
}

aws_cmd() {
  local a=("${OUTRUN_AWS:-aws}")
  [ -n "$REGION" ] && a+=(--region "$REGION")
  # an EC2 API emulator (e.g. moto_server) instead of AWS
  [ -n "$ENDPOINT" ] && a+=(--endpoint-url "$ENDPOINT")
  printf '%s\n' "${a[@]}"
}

need_aws() {
  [ "$DRY" -eq 1 ] || command -v "${OUTRUN_AWS:-aws}" >/dev/null || die "the AWS CLI (aws) is not installed; see docs/clusters.md"
}

ssh_opts() {
  local o="ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o ConnectTimeout=10 -l $SSH_USER"
  [ -n "$KEY_FILE" ] && o="$o -i $KEY_FILE"
  echo "$o"
}

# parse the options every script shares; the rest is left in REST
parse_common() {
  REST=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --dry-run) DRY=1; shift ;;
      --state) value "$@"; STATE="$2"; shift 2 ;;
      --user) value "$@"; SSH_USER="$2"; shift 2 ;;
      --key-file) value "$@"; KEY_FILE="$2"; shift 2 ;;
      --region) value "$@"; REGION="$2"; shift 2 ;;
      --endpoint-url) value "$@"; ENDPOINT="$2"; shift 2 ;;
      *) REST+=("$1"); shift ;;
    esac
  done
}

hosts_public() { awk '{print $1}' "$STATE/access"; }
