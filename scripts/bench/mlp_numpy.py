#!/usr/bin/env python3
"""make bench §10: the same batch gradient as `outrun bench mlp` in numpy (f64, one BLAS thread:
run with OPENBLAS_NUM_THREADS=1): a ReLU network with a softmax output, forward and backward over
the batch, best of the repetitions. Prints CSV: sizes,batch,numpy_ms,numpy_gflops.

    OPENBLAS_NUM_THREADS=1 python3 scripts/bench/mlp_numpy.py 784,200,200,10 64,256,1024 20
"""
import sys, time

import numpy as np

sizes = [int(v) for v in sys.argv[1].split(",")]
batches = [int(v) for v in sys.argv[2].split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
rng = np.random.default_rng(1)
layers = [(rng.normal(0, np.sqrt(2 / i), (o, i)), np.zeros(o)) for i, o in zip(sizes, sizes[1:])]


def gradient(x, y):
    acts = [x]
    for k, (w, b) in enumerate(layers):
        z = acts[-1] @ w.T + b
        acts.append(np.maximum(z, 0) if k + 1 < len(layers) else z)
    z = acts[-1]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    s = e.sum(axis=1, keepdims=True)
    loss = (np.log(s[:, 0]) - np.log(e[np.arange(len(y)), y])).sum()
    delta = e / s
    delta[np.arange(len(y)), y] -= 1
    grads = []
    for k in reversed(range(len(layers))):
        w, _ = layers[k]
        grads.append((delta.T @ acts[k], delta.sum(axis=0)))
        if k > 0:
            delta = (delta @ w) * (acts[k] > 0)
    return loss, grads


for b in batches:
    x = (np.arange(b * sizes[0]) % 257 / 257.0).reshape(b, sizes[0])
    y = np.arange(b) % sizes[-1]
    flops = sum(4 * b * i * o for i, o in zip(sizes, sizes[1:])) + sum(2 * b * i * o for i, o in zip(sizes[1:], sizes[2:]))
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        gradient(x, y)
        best = min(best, time.perf_counter() - t0)
    print(f"{'-'.join(map(str, sizes))},{b},{best * 1e3:.3f},{flops / best / 1e9:.2f}")
