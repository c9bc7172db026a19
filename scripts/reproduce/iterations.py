"""A run's iteration times as the reproduce docs report them (imported by cr_doc.py and
cr_latency_doc.py, which run from this directory)."""
import csv
import glob
import json
import os
import statistics as st


def walls(run_dir):
    """The run's iteration times in seconds, in order (its iterations.csv)."""
    return [float(r["wall_s"]) for r in csv.DictReader(open(os.path.join(run_dir, "iterations.csv")))]


def steady_mean(wall):
    """The mean over the iterations after the first (the whole run's when it has one). The first
    made every pair's first contact in runs before those contacts were made before the loop (Open
    MPI's TCP transport connects a pair on its first message) and can still be slower than the
    others, which a long run amortises and the simulator does not model: the docs list it apart
    (docs/performance.md §20, §21)."""
    return st.mean(wall[1:] if len(wall) > 1 else wall)


def contact_s(run_dir):
    """The longest any rank of the run spent on its first contacts before the loop (the setup
    records' `contact_s`); None for a run of a build that made them in its first iteration."""
    most = None
    for f in glob.glob(os.path.join(run_dir, "rank-*.jsonl")):
        with open(f) as lines:
            first = json.loads(lines.readline() or "{}")  # every rank's log opens with its setup
        if first.get("ev") == "setup" and first.get("contact_s") is not None:
            most = max(most or 0.0, first["contact_s"])
    return most


def first_apart(run_dirs):
    """Why the docs list a run's first iteration apart, as the runs `run_dirs` say: the clause
    after "the first …"."""
    c = [contact_s(d) for d in run_dirs]
    if all(x is None for x in c):
        return "also makes every pair's first contact (Open MPI's TCP transport connects a pair on its first message)"
    if any(x is None for x in c):
        return ("made every pair's first contact in some of these runs (Open MPI's TCP transport connects a pair on "
                "its first message; the others' ranks made theirs before the loop)")
    return (f"no longer makes first contacts (every rank made its own before the loop, in at most {max(c):.2f} s: "
            "the setup records' `contact_s`) but can still be slower than the others, for reasons not traced")
