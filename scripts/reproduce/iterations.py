"""A run's iteration times as the reproduce docs report them (imported by cr_doc.py and
cr_latency_doc.py, which run from this directory)."""
import csv
import os
import statistics as st


def walls(run_dir):
    """The run's iteration times in seconds, in order (its iterations.csv)."""
    return [float(r["wall_s"]) for r in csv.DictReader(open(os.path.join(run_dir, "iterations.csv")))]


def steady_mean(wall):
    """The mean over the iterations after the first (the whole run's when it has one). The first
    also makes every pair's first contact (Open MPI's TCP transport connects a pair on its first
    message), which a long run amortises and the simulator does not model: the docs list it
    apart (docs/performance.md §20)."""
    return st.mean(wall[1:] if len(wall) > 1 else wall)
