#!/usr/bin/env bash
# Run one experiment on a real cluster from an OpenMPI hostfile:
#   launch/cluster.sh --hostfile FILE CONFIG [--set section.key=value ...]
#       [--workdir DIR]        work directory on the hosts (default outrun-work, in the home)
#       [--ssh "CMD"]          ssh command (default: ssh -o BatchMode=yes ...)
#       [--access FILE]        the same hosts, in the same order, as reachable by ssh from here
#                              (e.g. public addresses; default: the hostfile's names)
#       [--launch-from HOST]   run mpirun on HOST over ssh (needed when the hosts cannot connect
#                              back to this machine, e.g. a laptop and cloud instances)
#       [--dry-run]            print the ssh / rsync / mpirun commands instead of running them
#       [--quiet]              no progress lines from rank 0
# It copies the outrun binary, the resolved config and every file it reads (data, held-out data,
# IDX labels, initial parameters, matrix, vector, graph) to every host
# (rsync over ssh; hosts need the same OS and OpenMPI as this machine — scripts/ec2/ sets that
# up) — and a Python model's module, with VIRTUAL_ENV passed to the ranks (each host needs that
# environment, with numpy, at the same path: docs/python.md) —, runs mpirun over the hostfile (the first host gets rank 0, the master: give it slots=1 so
# it is alone), and gathers the run directory from every host into runs/ here.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${OUTRUN_BIN:-$here/target/release/outrun}"
hostfile="" access="" launch_from="" config="" workdir="outrun-work" dry=0 quiet=()
ssh_cmd="ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new"
sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hostfile|--access|--launch-from|--workdir|--ssh|--set)
      [ $# -ge 2 ] || { echo "cluster: $1 needs a value" >&2; exit 2; } ;;
  esac
  case "$1" in
    --hostfile) hostfile="$2"; shift 2 ;;
    --access) access="$2"; shift 2 ;;
    --launch-from) launch_from="$2"; shift 2 ;;
    --workdir) workdir="$2"; shift 2 ;;
    --ssh) ssh_cmd="$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --quiet|-q) quiet=(--quiet); shift ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "cluster: unknown option $1" >&2; exit 2 ;;
    *) [ -z "$config" ] || { echo "cluster: one CONFIG only" >&2; exit 2; }; config="$1"; shift ;;
  esac
done
[ -n "$hostfile" ] && [ -n "$config" ] || { echo "usage: launch/cluster.sh --hostfile FILE CONFIG [--set k=v ...] [--workdir DIR] [--ssh CMD] [--access FILE] [--launch-from HOST] [--dry-run]" >&2; exit 2; }
[ -r "$hostfile" ] || { echo "cluster: cannot read hostfile $hostfile" >&2; exit 2; }
[ -z "$access" ] || [ -r "$access" ] || { echo "cluster: cannot read access file $access" >&2; exit 2; }
[ -x "$bin" ] || { echo "cluster: $bin not found; run 'make build' first" >&2; exit 2; }

run() {  # print, or run, one command
  if [ "$dry" -eq 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi
}
hosts_of() { grep -v '^[[:space:]]*\(#\|$\)' "$1" | awk '{print $1}'; }

mapfile -t hosts < <(hosts_of "${access:-$hostfile}")
[ ${#hosts[@]} -ge 1 ] || { echo "cluster: no hosts in ${access:-$hostfile}" >&2; exit 2; }
if [ -n "$access" ]; then
  [ "$(hosts_of "$access" | wc -l)" -eq "$(hosts_of "$hostfile" | wc -l)" ] || { echo "cluster: $access and $hostfile list different numbers of hosts" >&2; exit 2; }
fi

# a Python model imports from the active virtual environment, or the repository's .venv
if [ -z "${VIRTUAL_ENV:-}" ] && [ -x "$here/.venv/bin/python" ]; then
  export VIRTUAL_ENV="$here/.venv"
fi
OUTRUN_LAUNCHER=launch/cluster.sh "$bin" check "$config" "${sets[@]}" >/dev/null
np="$("$bin" plan "$config" --ranks "${sets[@]}")"
# slots=K must be a whole number of 1 or more (awk read `slots=x` as 0 and said "0 slots")
bad_slots="$(awk '!/^[[:space:]]*(#|$)/ {for(i=2;i<=NF;i++) if ($i ~ /^slots=/ && $i !~ /^slots=[1-9][0-9]*$/) {print FILENAME ":" FNR ": " $i " is not a whole number of slots, 1 or more"; exit}}' "$hostfile")"
[ -z "$bad_slots" ] || { echo "cluster: $bad_slots" >&2; exit 2; }
slots="$(grep -v '^[[:space:]]*\(#\|$\)' "$hostfile" | awk '{n=1; for(i=2;i<=NF;i++) if ($i ~ /^slots=/) {sub(/^slots=/,"",$i); n=$i} s+=n} END{print s+0}')"
[ "$np" -le "$slots" ] || { echo "cluster: the run needs $np MPI ranks but $hostfile has $slots slots; add hosts or slots=K" >&2; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$bin" config "$config" "${sets[@]}" > "$tmp/config.toml"
cp "$hostfile" "$tmp/hostfile"
files=("$bin" "$tmp/config.toml" "$tmp/hostfile")
remote_sets=(--set "run.out_dir=$workdir/runs")
# every file the ranks read (the resolved config names it by its absolute path here, which other
# hosts lack) goes beside the config, under its own name — the key's before it where two files
# share a name (train/data.csv, test/data.csv) —, and the config is pointed at the copy; the
# straggler and link files are already inside the resolved config
mkdir "$tmp/in"
declare -A taken=([outrun]=1 [config.toml]=1 [hostfile]=1 [runs]=1)  # the work directory's own
mpi_env=()
for key in data.path data.test_path data.labels_path data.test_labels_path model.init_path \
           matrix.path vector.path graph.path job.module; do
  file="$(awk -v want="[${key%%.*}]" -v field="${key#*.}" '/^\[/{s=$0; next} s==want && $1==field && $2=="=" {sub(/^[^=]*= */,""); gsub(/^"|"$/,""); print}' "$tmp/config.toml")"
  [ -n "$file" ] || continue
  name="$(basename "$file")"
  [ -z "${taken[$name]:-}" ] || name="$key-$name"
  taken[$name]=1
  ln -s "$file" "$tmp/in/$name"
  files+=("$tmp/in/$name")
  remote_sets+=(--set "$key=$workdir/$name")
  echo "cluster: $key $file goes to $workdir/$name on every host" >&2
  # a Python model's ranks import from the same VIRTUAL_ENV path on every host
  if [ "$key" = job.module ] && [ -n "${VIRTUAL_ENV:-}" ]; then mpi_env=(-x VIRTUAL_ENV -x OMP_NUM_THREADS=1); fi
done
echo "cluster: $np ranks over ${#hosts[@]} hosts; work directory $workdir" >&2
for h in "${hosts[@]}"; do
  run $ssh_cmd "$h" mkdir -p "$workdir/runs"
  run rsync -azL -e "$ssh_cmd" "${files[@]}" "$h:$workdir/"
done

# Ranks start in the launching user's home (or mpirun's directory when it exists on the host),
# where the relative work directory lives; give an absolute --workdir otherwise.
program=("$workdir/outrun" train "$workdir/config.toml" "${remote_sets[@]}" "${quiet[@]}")
log="$tmp/mpirun.log"
# poll instead of epoll in mpirun's event loop (see launch/local.sh)
export EVENT_NOEPOLL=1
if [ -n "$launch_from" ]; then
  remote=(mpirun --hostfile "$workdir/hostfile" -np "$np" --map-by slot --bind-to none "${mpi_env[@]}" "${program[@]}")
  # shellcheck disable=SC2029
  run $ssh_cmd "$launch_from" "cd && $(printf '%q ' "${remote[@]}")" | tee "$log"
else
  run mpirun --hostfile "$hostfile" -np "$np" --map-by slot --bind-to none \
    --mca plm_rsh_agent "$ssh_cmd" "${mpi_env[@]}" "${program[@]}" | tee "$log"
fi

if [ "$dry" -eq 1 ]; then
  rundir="$workdir/runs/NAME-STAMP"
else
  rundir="$(sed -n 's/^run directory: //p' "$log" | tail -1)"
  [ -n "$rundir" ] || { echo "cluster: the run did not report a run directory; nothing gathered" >&2; exit 1; }
fi
mkdir -p "$here/runs"
for h in "${hosts[@]}"; do
  run rsync -az -e "$ssh_cmd" "$h:$rundir" "$here/runs/"
done
echo "cluster: gathered $(basename "$rundir") into runs/" >&2
