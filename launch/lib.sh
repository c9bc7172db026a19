# Shared by launch/local.sh and launch/emu-cluster (sourced): run one MPI job so that it always
# ends, Ctrl-C stops it, and a rank's death is reported in one line.
#
#   run_mpi_job BOUND_SECONDS mpirun ARGS...
#
# - The job is bounded: past BOUND_SECONDS it is stopped (TERM, then KILL 10 s later) and one
#   line says so (exit 124).
# - Ctrl-C (or TERM) stops the whole job, not only this script (exit 130).
# - mpirun's banners are reduced to one line: "error: rank R (host H) died from signal S (NAME)"
#   for a rank killed by a signal (mpirun's --quiet would print nothing at all); its notes around
#   an abort (aggregated help messages, ORTE_ERROR_LOG) are dropped; outrun's own lines pass
#   through. The line is also written to the run directory (launch.log), which rank 0
#   reports through OUTRUN_RUN_DIR_FILE. OUTRUN_MPI_VERBOSE=1 shows mpirun's output unfiltered.

# Reads mpirun's stderr; prints outrun's lines and a one-line summary of each dead rank (also
# appended to the file $1). A rank that ended the job without a word of its own — it exited
# with a non-zero code, or exited in the middle of the run without finishing MPI (user code
# calling exit: a Python model's os._exit) — is named in one line too, from mpirun's report.
# The file $1.said exists once a line was printed. Each line passes as it comes: mawk (Debian's
# awk) reads a pipe in blocks unless told it is interactive, which held a run's progress lines
# and rank 0's notes until the job ended whenever stderr was not a terminal.
filter_mpirun() {
  local interactive=()
  if awk -W version 2>/dev/null | grep -q mawk; then interactive=(-W interactive); fi
  awk ${interactive[@]+"${interactive[@]}"} -v deaths="$1" -v done="$1.done" -v said="$1.said" '
    function say(line) { print line; fflush(); print line >> deaths; fflush(deaths); spoke = 1 }
    # the first paragraph of mpirun'"'"'s first banner, kept for a job that fails without a word
    # ("There are not enough slots available in the system to satisfy the 13 slots ...")
    /^------------------------------/ {
      block = !block
      if (block && banner == "") inpara = 1
      if (!block && inpara) { banner = para; inpara = 0 }
      next
    }
    block && inpara {
      if ($0 ~ /^[ \t]*$/) { if (para != "") { banner = para; inpara = 0 } }
      else { line = $0; sub(/^[ \t]+/, "", line); para = (para == "" ? line : para " " line) }
    }
    block && /exited on signal/ {
      r = "?"; h = "?"; s = "a signal"
      if (match($0, /rank [0-9]+/)) r = substr($0, RSTART + 5, RLENGTH - 5)
      if (match($0, /on node [^ ]+/)) h = substr($0, RSTART + 8, RLENGTH - 8)
      if (match($0, /signal [0-9]+ \([^)]*\)/)) s = substr($0, RSTART, RLENGTH)
      say("error: rank " r " (host " h ") died from " s "; the job was stopped")
      next
    }
    # "mpirun has exited due to process rank R with PID P on / node H exiting improperly"
    block && /due to process rank [0-9]+ with PID/ {
      if (match($0, /rank [0-9]+/)) improper = substr($0, RSTART + 5, RLENGTH - 5)
      next
    }
    block && /^node [^ ]+ exiting improperly/ { host = $2; next }
    # "Process name: [[J,1],R]" and "Exit code: C" of the first rank that exited non-zero
    block && /Process name: \[\[[0-9]+,[0-9]+\],[0-9]+\]/ {
      if (match($0, /\],[0-9]+\]/)) exited = substr($0, RSTART + 2, RLENGTH - 3)
      next
    }
    block && /Exit code:/ { code = $NF; next }
    block { next }
    # ORTE'"'"'s notes around an abort (the help text aggregated, its error log): outrun has said why
    /\] [0-9]+ more process(es)? ha(s|ve) sent help message/ { next }
    /Set MCA parameter "orte_base_help_aggregate" to 0/ { next }
    /ORTE_ERROR_LOG/ { next }
    /^(error|warning):/ { spoke = 1 }
    # the same error from several ranks (every worker'"'"'s grad raising on the same batch): its
    # first line, and at the end one note naming the other ranks
    /^error:.*rank [0-9]+/ {
      match($0, /rank [0-9]+/)
      r = substr($0, RSTART + 5, RLENGTH - 5)
      key = substr($0, 1, RSTART - 1) "rank #" substr($0, RSTART + RLENGTH)
      if (key in seen) { also[key] = also[key] ", " r; nalso[key]++; next }
      seen[key] = 1; order[++nkeys] = key
    }
    { print; fflush() }
    END {
      for (i = 1; i <= nkeys; i++) if (nalso[order[i]] > 0) {
        print "note: rank" (nalso[order[i]] > 1 ? "s " : " ") substr(also[order[i]], 3) " said the same (one line shown)"
        fflush()
      }
      if (!spoke && improper != "")
        say("error: rank " improper (host != "" ? " (host " host ")" : "") " exited in the middle of the run without finishing MPI (its code called exit, e.g. os._exit in a Python model, without a word); the job was stopped")
      else if (!spoke && exited != "")
        say("error: rank " exited " exited with code " code " without a word; the job was stopped")
      if (spoke) printf "" > said
      sub(/:[ \t]*$/, "", banner)
      if (banner != "") printf "%s", banner > (deaths ".banner")
      printf "" > done
    }
  '
}

run_mpi_job() {
  local bound="$1"; shift
  local note deaths
  note=$(mktemp); deaths=$(mktemp)
  export OUTRUN_RUN_DIR_FILE="$note"
  local rc=0 interrupted=0 pid start=$SECONDS
  if [ "${OUTRUN_MPI_VERBOSE:-0}" = "1" ]; then
    setsid timeout --foreground --kill-after=10 "$bound" "$@" &
  else
    setsid timeout --foreground --kill-after=10 "$bound" "$@" 2> >(trap "" INT; filter_mpirun "$deaths" >&2) &
  fi
  pid=$!
  # The job runs in its own session (setsid), so Ctrl-C reaches only this script, which forwards
  # exactly one TERM: `timeout --foreground` passes it to mpirun alone, and mpirun stops its
  # ranks. (Two signals — say the terminal's INT and a TERM — make mpirun exit at once without
  # stopping its ranks, which run in their own process groups.)
  trap 'interrupted=1; kill -TERM "$pid" 2>/dev/null || true' INT TERM
  while :; do
    wait "$pid" && rc=0 || rc=$?
    # a trapped signal interrupts wait while the job is still stopping
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - INT TERM
  # the stderr filter ends when the job's last writer is gone (not `wait`: a caller's own
  # process substitution would never end while this shell runs)
  local i
  for i in $(seq 50); do
    [ -e "$deaths.done" ] || [ "${OUTRUN_MPI_VERBOSE:-0}" = "1" ] && break
    sleep 0.1
  done
  local dir=""; [ -s "$note" ] && dir=$(cat "$note")
  if [ -s "$deaths" ] && [ -n "$dir" ] && [ -d "$dir" ]; then
    cat "$deaths" >> "$dir/launch.log"
  fi
  local said=1 banner=""
  [ "${OUTRUN_MPI_VERBOSE:-0}" = "1" ] || [ -e "$deaths.said" ] || said=0
  [ -s "$deaths.banner" ] && banner=$(cat "$deaths.banner")
  rm -f "$note" "$deaths" "$deaths.done" "$deaths.said" "$deaths.banner"
  if [ "$interrupted" -eq 1 ]; then
    echo "launch: interrupted; the MPI job was stopped${dir:+ (run directory $dir)}" >&2
    return 130
  fi
  # timeout exits 124 after TERM, 137 if KILL was needed too
  if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ $((SECONDS - start)) -ge "$bound" ]; }; then
    # the bound the user set (local.sh's bound_said: OUTRUN_TIMEOUT, of which the check used a part)
    echo "launch: the job did not end within its bound of ${bound_said:-$bound} s and was stopped (default: ${bound_default:-120 s + run.iterations × run.deadline}; set OUTRUN_TIMEOUT=SECONDS to change it)" >&2
    return 124
  fi
  # no non-zero exit without a line: mpirun itself interrupted or killed, or a failure nobody named
  if [ "$rc" -ne 0 ] && [ "$said" -eq 0 ] && [ -n "$banner" ]; then
    # mpirun refused or failed the job itself (no slots, an unreachable host): its own first words
    echo "launch: mpirun: $banner (exit code $rc; OUTRUN_MPI_VERBOSE=1 shows its whole report)" >&2
  elif [ "$rc" -ne 0 ] && [ "$said" -eq 0 ]; then
    echo "launch: the MPI job ended with exit code $rc and no rank said why (mpirun was interrupted or killed, or a rank ended without a word)${dir:+; run directory $dir}; OUTRUN_MPI_VERBOSE=1 shows mpirun's own report" >&2
  fi
  return "$rc"
}

# --quiet and --resume RUN_DIR are for `outrun train` alone (check and plan do not take them):
# split them off.
#   split_train_only "$@"; set -- "${ARGS[@]}"   then   ... train "$config" "$@" "${TRAIN_ONLY[@]}"
split_train_only() {
  TRAIN_ONLY=(); ARGS=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --quiet|-q) TRAIN_ONLY+=(--quiet) ;;
      --resume)
        if [ $# -lt 2 ]; then echo "launch: --resume needs a run directory" >&2; exit 2; fi
        TRAIN_ONLY+=(--resume "$2"); shift ;;
      --resume=*) TRAIN_ONLY+=(--resume "${1#--resume=}") ;;
      *) ARGS+=("$1") ;;
    esac
    shift
  done
}

# Rank 0 has no terminal under mpirun: tell it the width of ours, if stdout is one, so that it
# draws its progress bar (on stdout, which mpirun relays as it comes).
export_terminal() {
  if [ -t 1 ]; then
    OUTRUN_TERMINAL="$(tput cols 2>/dev/null || echo 100)"
  else
    OUTRUN_TERMINAL=0
  fi
  export OUTRUN_TERMINAL
}
