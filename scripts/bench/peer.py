"""Helpers for scripts/bench/peer.sh: outrun against Tandon et al.'s published mpi4py code
(github.com/rashisht1/gradient_coding) on the same job. The peer's code is not part of this
project; the user gives a checkout, which `prepare` copies and edits for Python 3.

  peer.py prepare CHECKOUT DEST     copy the checkout to DEST with the Python 3 edits below
  peer.py run DEST ARGS...          run DEST/main.py ARGS (under mpirun) with an injected delay
  peer.py csv DATA_DIR WORKERS OUT  the peer's generated data as one CSV file outrun reads
  peer.py delays WORKERS SLOW SECONDS ITERATIONS OUT   outrun's trace of the same delay
  peer.py elapsed LOG ITERATIONS    the peer's mean seconds per iteration of its timed loop
  peer.py report RESULTS.csv        the markdown table of make bench's peer section

The only Python 3 changes the peer needs are integer divisions (`/` on ints gives a float in
Python 3, which the peer then uses as a slice bound or an index). `prepare` makes exactly the
edits listed in PY3_EDITS and fails naming the file if one no longer matches.
"""
import csv
import os
import re
import runpy
import shutil
import statistics
import sys
import time

PY3_EDITS = [
    ("src/generate_data.py", "n_rows_per_worker = n_rows / partitions",
     "n_rows_per_worker = n_rows // partitions"),
    ("src/coded.py", "rows_per_worker=n_samples/(n_procs-1)",
     "rows_per_worker=n_samples//(n_procs-1)"),
    ("src/replication.py", "rows_per_worker=n_samples/(n_procs-1)",
     "rows_per_worker=n_samples//(n_procs-1)"),
    ("src/replication.py", "n_groups=n_workers/(n_stragglers+1)",
     "n_groups=n_workers//(n_stragglers+1)"),
    ("src/replication.py", "a=(rank-1)/(n_stragglers+1)", "a=(rank-1)//(n_stragglers+1)"),
    ("src/replication.py", "groupid = (src-1)/(n_stragglers+1)",
     "groupid = (src-1)//(n_stragglers+1)"),
    ("src/util.py", "idx=(st+nd)/2", "idx=(st+nd)//2"),
]


def prepare(checkout, dest):
    if not os.path.isfile(os.path.join(checkout, "main.py")):
        sys.exit(f"peer: {checkout}: not a checkout of rashisht1/gradient_coding (no main.py)")
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(checkout, dest, ignore=shutil.ignore_patterns(".git"))
    for path, old, new in PY3_EDITS:
        full = os.path.join(dest, path)
        text = open(full).read()
        if old not in text:
            sys.exit(f"peer: {path}: expected `{old}` (another version of the peer?)")
        open(full, "w").write(text.replace(old, new))


def run(dest, args):
    """Runs the peer's main.py. The rank PEER_SLOW_RANK sleeps PEER_DELAY_S before every
    result it sends to the master (the delay outrun's trace adds to the same worker). Rank 0
    prints the time between its first two barriers, which bracket the peer's timed loop: its own
    "Total Time Elapsed" also waits, in the barrier after the loop, for a delayed worker's
    backlog of results the master no longer needed."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    delay = float(os.environ.get("PEER_DELAY_S", "0"))
    if delay > 0 and world.Get_rank() != int(os.environ.get("PEER_SLOW_RANK", "0")):
        delay = 0
    MPI.COMM_WORLD = Watched(world, delay)
    os.chdir(dest)
    sys.argv = ["main.py"] + args
    runpy.run_path("main.py", run_name="__main__")


class Watched:
    """COMM_WORLD with a sleep before each send to rank 0 (a worker's result, when `delay` is
    set) and a record of when the first two barriers end and begin."""

    def __init__(self, comm, delay):
        self._comm, self._delay, self._barriers = comm, delay, []

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def Isend(self, buf, dest, tag=0):
        if dest == 0 and self._delay > 0:
            time.sleep(self._delay)
        return self._comm.Isend(buf, dest=dest, tag=tag)

    def Barrier(self):
        self._barriers.append(time.time())
        self._comm.Barrier()
        if len(self._barriers) == 1:
            self._barriers.append(time.time())
        elif len(self._barriers) == 3 and self._comm.Get_rank() == 0:
            print(f"peer loop seconds: {self._barriers[2] - self._barriers[1]:.6f}", flush=True)


def to_csv(data_dir, workers, out):
    import numpy as np

    labels = np.loadtxt(os.path.join(data_dir, "label.dat"))
    with open(out, "w") as f:
        row = 0
        for part in range(1, workers + 1):
            x = np.loadtxt(os.path.join(data_dir, f"{part}.dat"))
            for values in x:
                f.write(repr(float(labels[row])) + "," + ",".join(map(repr, values.tolist())) + "\n")
                row += 1


def delays(workers, slow, seconds, iterations, out):
    with open(out, "w") as f:
        f.write("worker,iteration,seconds\n")
        for w in range(1, workers + 1):
            for t in range(iterations):
                f.write(f"{w},{t},{seconds if w == slow else 0}\n")


def elapsed(log, iterations):
    m = re.search(r"peer loop seconds: ([0-9.]+)", open(log).read())
    if not m:
        sys.exit(f"peer: {log}: no 'peer loop seconds' line (the peer's run failed; see the log)")
    print(float(m.group(1)) / iterations)


def report(path):
    rows = list(csv.DictReader(open(path)))
    print("| scheme | straggler | outrun ms/iteration | peer ms/iteration | outrun/peer | pairwise | target ≤ 0.8× |")
    print("|---|---|---|---|---|---|---|")
    keys = []
    for r in rows:
        if (r["scheme"], r["delay_ms"]) not in keys:
            keys.append((r["scheme"], r["delay_ms"]))
    for scheme, delay in keys:
        sel = [r for r in rows if r["scheme"] == scheme and r["delay_ms"] == delay]
        ours = statistics.median(float(r["outrun_s"]) for r in sel)
        theirs = statistics.median(float(r["peer_s"]) for r in sel)
        pairs = [float(r["outrun_s"]) / float(r["peer_s"]) for r in sel]
        ratio = ours / theirs
        who = "none" if float(delay) == 0 else f"worker 3 +{float(delay):g} ms"
        print(f"| {scheme} | {who} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ratio:.2f}× "
              f"| {min(pairs):.2f}–{max(pairs):.2f} | {'met' if ratio <= 0.8 else 'missed'} |")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "prepare":
        prepare(*args)
    elif cmd == "run":
        run(args[0], args[1:])
    elif cmd == "csv":
        to_csv(args[0], int(args[1]), args[2])
    elif cmd == "delays":
        delays(int(args[0]), int(args[1]), float(args[2]), int(args[3]), args[4])
    elif cmd == "elapsed":
        elapsed(args[0], int(args[1]))
    elif cmd == "report":
        report(args[0])
    else:
        sys.exit(f"peer.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
