"""The gradient-coding master-worker loop in mpi4py + numpy, the stack of the papers' own
prototypes: the master Isends theta to every worker, posts an Irecv per worker, Waitany until
N - s results, decodes by least squares and updates theta. Used by `make bench` as the
baseline for outrun's per-iteration engine overhead (same N, p, data size, no injected delay).

Unlike the prototypes, it completes every outstanding receive (late results are waited for at
the next iteration's start and discarded by tag), so the comparison is against a correct loop.

usage: mpirun -np N+1 python3 gc_mpi4py.py ITERATIONS P S SAMPLES_PER_WORKER
prints (rank 0): mean_s,p50_s,p95_s
"""
import sys
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
T, P, S, M = (int(a) for a in sys.argv[1:5])
N = size - 1
MODEL, STOP = 1, 2


def cyclic_b(n, s, rng):
    """Tandon et al.'s cyclic repetition code (random construction)."""
    if s == 0:
        return np.eye(n)
    h = rng.standard_normal((s, n - 1))
    h = np.hstack([h, -h.sum(axis=1, keepdims=True)])
    b = np.zeros((n, n))
    for i in range(n):
        sup = [(i + j) % n for j in range(s + 1)]
        b[i, i] = 1.0
        b[i, sup[1:]] = -np.linalg.solve(h[:, sup[1:]], h[:, i])
    return b


if rank == 0:
    b = cyclic_b(N, S, np.random.default_rng(0))
    theta = np.zeros(P)
    walls = []
    pending = []  # (request, buffer) of results not yet received
    last = time.perf_counter()
    for t in range(T):
        # complete last iteration's late receives (discarded)
        for req, _ in pending:
            req.Wait()
        msg = np.concatenate([[float(MODEL), float(t)], theta])
        sends = [comm.Isend(msg, dest=w, tag=1) for w in range(1, N + 1)]
        bufs = [np.empty(P + 2) for _ in range(N)]
        reqs = [comm.Irecv(bufs[w], source=w + 1, tag=100 + t % 10000) for w in range(N)]
        got = []
        for _ in range(N - S):
            idx = MPI.Request.Waitany(reqs)
            got.append(idx)
        pending = [(reqs[i], bufs[i]) for i in range(N) if i not in got]
        f = sorted(got)
        a, *_ = np.linalg.lstsq(b[f, :].T, np.ones(N), rcond=None)
        g = sum(a[j] * bufs[i][2:] for j, i in enumerate(f))
        theta -= 1e-6 * (g / (N * M))
        MPI.Request.Waitall(sends)
        now = time.perf_counter()
        walls.append(now - last)
        last = now
    for req, _ in pending:
        req.Wait()
    stop = np.array([float(STOP), 0.0])
    MPI.Request.Waitall([comm.Isend(stop, dest=w, tag=1) for w in range(1, N + 1)])
    w = np.array(walls)
    print("%.9f,%.9f,%.9f" % (w.mean(), np.percentile(w, 50), np.percentile(w, 95)))
else:
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((M * (S + 1), P))
    y = rng.standard_normal(M * (S + 1))
    msg = np.empty(P + 2)
    while True:
        comm.Recv(msg, source=0, tag=1)
        if msg[0] == STOP:
            break
        t = int(msg[1])
        theta = msg[2:]
        r = x @ theta - y
        out = np.concatenate([[10.0, float(t)], x.T @ r])
        comm.Send(out, dest=0, tag=100 + t % 10000)
