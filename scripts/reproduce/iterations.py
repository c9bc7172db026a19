"""A run's iteration times as the reproduce docs report them, and the links they ran over
(imported by the *_doc.py scripts beside it, which run from this directory)."""
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
    records' `contact_s`) and the ranks that heard nothing from a peer within the bound (their
    `unanswered`: they meet in the loop, as with a straggler); (None, []) for a run of a build
    that made them in its first iteration."""
    most, silent = None, []
    for f in glob.glob(os.path.join(run_dir, "rank-*.jsonl")):
        with open(f) as lines:
            first = json.loads(lines.readline() or "{}")  # every rank's log opens with its setup
        if first.get("ev") == "setup" and first.get("contact_s") is not None:
            most = max(most or 0.0, first["contact_s"])
            if first.get("unanswered"):
                silent.append(first["rank"])
    return most, sorted(silent)


def first_apart(run_dirs):
    """Why the docs list a run's first iteration apart, as the runs `run_dirs` say: the clause
    after "the first …"."""
    runs = {os.path.basename(os.path.normpath(d)): contact_s(d) for d in run_dirs}
    c = [most for most, _ in runs.values()]
    if all(x is None for x in c):
        return "also makes every pair's first contact (Open MPI's TCP transport connects a pair on its first message)"
    if any(x is None for x in c):
        return ("made every pair's first contact in some of these runs (Open MPI's TCP transport connects a pair on "
                "its first message; the others' ranks made theirs before the loop)")
    silent = [f"ranks {', '.join(map(str, ranks))} of `{name}`" for name, (_, ranks) in sorted(runs.items()) if ranks]
    if not silent:
        return (f"no longer makes first contacts (every rank made its own before the loop, in at most {max(c):.2f} s: "
                "the setup records' `contact_s`) but can still be slower than the others, for reasons not traced")
    quick = [most for most, ranks in runs.values() if not ranks]
    rest = f"; every rank of the other runs in at most {max(quick):.2f} s" if quick else ""
    return ("no longer makes first contacts, except where a pair did not get through before the loop: "
            f"{'; '.join(silent)} heard nothing from a peer within the contact bound (the run's deadline; "
            f"the setup records' `unanswered`) and met it in the first iteration{rest} (`contact_s`). "
            "It can still be slower than the others for reasons not traced")


def shaped(bursts):
    """How links were shaped, given the tc tbf bursts in bytes their run recorded (none: "tc tbf")."""
    bursts = sorted(set(bursts) - {""}, key=int)
    return f"tc tbf, a burst of {' / '.join(bursts)} B: what a link that waited sends at once" if bursts else "tc tbf"


def tbf(out):
    """How the run's links were shaped, with their tc tbf burst (what a link that waited sends at
    once) where the run recorded it: `reproduce_burst` writes a `burst` or `*.burst` file under
    OUT. Only PageRank's runs recorded it before 7638520 (the others' links had 16 KB until
    2026-12-05, 3028 B from 09b09fb: docs/clusters.md says which page ran with which)."""
    files = glob.glob(os.path.join(out, "**", "burst"), recursive=True)
    files += glob.glob(os.path.join(out, "**", "*.burst"), recursive=True)
    return shaped(open(f).read().strip() for f in files)
