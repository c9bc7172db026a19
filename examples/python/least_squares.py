"""Least squares in NumPy: the model of outrun's built-in `model.loss = "least-squares"`,
written as a module for `[job] kind = "python"` (see least-squares.toml and docs/python.md).

outrun calls init once per rank, then grad for every part of every iteration: X holds a part's
rows (or its rows of the iteration's mini-batch), w their weights (a gradient code's
coefficients), and grad returns the weighted sums the scheme decodes and the optimizer divides
by the batch size: g = sum_k w_k (x_k . theta - y_k) x_k and loss = sum_k w_k (x_k . theta - y_k)^2 / 2.
"""

import numpy as np


def init(options, seed, features):
    """theta_0: zeros, one weight per feature (the built-in linear model's start)."""
    return np.zeros(features)


def grad(theta, X, y, w):
    r = X @ theta - y
    return X.T @ (w * r), 0.5 * float(w @ (r * r))


def evaluate(theta, X, y):
    """The held-out rows' mean loss (data.test_path or data.test_fraction): iterations.csv's
    test_loss, a regression's held-out metric, which the built-in least squares does not offer."""
    r = X @ theta - y
    return {"loss": 0.5 * float(np.mean(r * r))}
