#!/usr/bin/env python3
"""Oracle for the serial reference's gradients (crates/workloads/tests/numpy_oracle.rs): numpy's
own forward and backward passes of a ReLU network with a softmax output, and of least squares
on one-hot outputs, on inputs any program can regenerate from their formulas:

    x[j, k] = sin(0.7·(j·p + k)),  y[j] = j mod C,  θ[i] = 0.3·cos(1.3·i)

Parameters in outrun's layout (per layer W, outputs × inputs row-major, then b; least squares:
θ is p × C row-major). Writes `name`, the loss sum and the gradient sum, one per line.

    python3 scripts/oracles/mlp_numpy.py > crates/workloads/tests/data/numpy_gradients.txt
"""
import numpy as np

N, P, C = 7, 5, 3
x = np.sin(0.7 * np.arange(N * P, dtype=float)).reshape(N, P)
y = np.arange(N) % C


def theta(n):
    return 0.3 * np.cos(1.3 * np.arange(n, dtype=float))


def softmax_net(sizes):
    count = sum(o * (i + 1) for i, o in zip(sizes, sizes[1:]))
    th = theta(count)
    layers, at = [], 0
    for i, o in zip(sizes, sizes[1:]):
        w = th[at:at + o * i].reshape(o, i)
        b = th[at + o * i:at + o * (i + 1)]
        layers.append((w, b, at))
        at += o * (i + 1)
    acts = [x]
    for k, (w, b, _) in enumerate(layers):
        z = acts[-1] @ w.T + b
        acts.append(np.maximum(z, 0) if k + 1 < len(layers) else z)
    z = acts[-1]
    m = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - m).sum(axis=1)) + m[:, 0]
    loss = (lse - z[np.arange(N), y]).sum()
    delta = np.exp(z - m) / np.exp(z - m).sum(axis=1, keepdims=True)
    delta[np.arange(N), y] -= 1
    grad = np.zeros(count)
    for k in reversed(range(len(layers))):
        w, b, at = layers[k]
        o, i = w.shape
        grad[at:at + o * i] = (delta.T @ acts[k]).ravel()
        grad[at + o * i:at + o * (i + 1)] = delta.sum(axis=0)
        delta = (delta @ w) * (acts[k] > 0)
    return loss, grad


def least_squares():
    th = theta(P * C).reshape(P, C)
    r = x @ th - np.eye(C)[y]
    return 0.5 * (r * r).sum(), (x.T @ r).ravel()


cases = [("softmax 5-3", softmax_net([P, C])), ("softmax 5-4-3-3", softmax_net([P, 4, 3, C])),
         ("least squares 5x3", least_squares())]
for name, (loss, grad) in cases:
    print(name)
    print(repr(float(loss)))
    print(" ".join(repr(float(g)) for g in grad))
