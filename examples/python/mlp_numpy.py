"""A multi-layer perceptron in NumPy for `[job] kind = "python"`: the network of outrun's built-in
`model.loss = "softmax"` with `hidden = [...]` (ReLU hidden layers, softmax cross-entropy over
`classes`), forward and backward written out, so it runs where PyTorch is not installed
(mlp_torch.py is the same network in PyTorch).

Options (`[job.options]`): `hidden` (default [128]) and `classes`. Layout: for each layer from the
input, W (outputs x inputs, row-major) then b. theta_0: He-scaled normal weights and zero biases
drawn from numpy's generator under `seed` (model.init_path replaces it).
"""

import numpy as np

sizes = None


def init(options, seed, features):
    global sizes
    sizes = [features] + [int(h) for h in options.get("hidden", [128])] + [int(options["classes"])]
    rng = np.random.default_rng(seed)
    parts = []
    for i, o in zip(sizes, sizes[1:]):
        parts += [rng.normal(0.0, np.sqrt(2.0 / i), o * i), np.zeros(o)]
    return np.concatenate(parts)


def _layers(theta):
    """(W, b) views of theta, layer by layer."""
    at, out = 0, []
    for i, o in zip(sizes, sizes[1:]):
        w = theta[at:at + o * i].reshape(o, i)
        out.append((w, theta[at + o * i:at + o * i + o]))
        at += o * (i + 1)
    return out


def _forward(layers, X):
    acts = [X]
    for k, (w, b) in enumerate(layers):
        z = acts[-1] @ w.T + b
        acts.append(np.maximum(z, 0.0) if k + 1 < len(layers) else z)
    return acts


def _softmax(z, y):
    """Per-row cross-entropy and the softmax's probabilities."""
    e = np.exp(z - z.max(axis=1, keepdims=True))
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(len(y))
    return np.log(s[:, 0]) - np.log(e[rows, y]), e / s


def grad(theta, X, y, w):
    layers = _layers(theta)
    acts = _forward(layers, X)
    labels = y.astype(np.int64)
    losses, delta = _softmax(acts[-1], labels)
    delta[np.arange(len(labels)), labels] -= 1.0
    delta *= w[:, None]
    grads = []
    for k in reversed(range(len(layers))):
        grads.append(delta.sum(axis=0))
        grads.append((delta.T @ acts[k]).reshape(-1))
        if k > 0:
            delta = (delta @ layers[k][0]) * (acts[k] > 0)
    return np.concatenate(grads[::-1]), float(w @ losses)


def evaluate(theta, X, y):
    acts = _forward(_layers(theta), X)
    labels = y.astype(np.int64)
    losses, _ = _softmax(acts[-1], labels)
    return {"accuracy": float((acts[-1].argmax(axis=1) == labels).mean()), "loss": float(losses.mean())}
