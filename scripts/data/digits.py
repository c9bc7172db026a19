#!/usr/bin/env python3
"""Write the real-digits data sets: scikit-learn's bundled `digits` (a copy of the test set of
the UCI "Optical Recognition of Handwritten Digits" data, E. Alpaydin and C. Kaynak, 1998;
CC BY 4.0; 8×8 images, pixels 0..16), as LIBSVM files with 64 features scaled to [0, 1], zeros
omitted:

- data/digits-4-9-{train,test}.libsvm (configs/real-digits.toml): the digits 4 and 9, label 1
  for a 9 and 0 for a 4 (logistic regression, as the CR paper's GISETTE task separates 4 from
  9), a seeded 80/20 split;
- data/digits-{train,test}.libsvm (configs/mlp-digits.toml, configs/softmax-digits.toml): all
  ten digits, label = the digit (0..9), a seeded 80/20 split.

    python3 -m pip install scikit-learn   # once (it ships the data; no download)
    python3 scripts/data/digits.py [OUT_DIR]
"""
import os, sys

import numpy as np
from sklearn.datasets import load_digits


def write(path, x, y):
    with open(path, "w") as f:
        for xi, yi in zip(x, y):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(xi) if v != 0)
            f.write(f"{yi} {feats}\n")


def split(n, seed):
    order = np.random.RandomState(seed).permutation(n)
    cut = int(round(0.8 * n))
    return (("train", order[:cut]), ("test", order[cut:]))


out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "data")
d = load_digits()

keep = (d.target == 4) | (d.target == 9)
x, y = d.data[keep] / 16.0, (d.target[keep] == 9).astype(int)
for name, idx in split(len(y), 49):
    path = os.path.join(out, f"digits-4-9-{name}.libsvm")
    write(path, x[idx], y[idx])
    print(f"{path}: {len(idx)} samples ({int(y[idx].sum())} nines, {len(idx) - int(y[idx].sum())} fours), 64 features")

x, y = d.data / 16.0, d.target.astype(int)
for name, idx in split(len(y), 10):
    path = os.path.join(out, f"digits-{name}.libsvm")
    write(path, x[idx], y[idx])
    counts = np.bincount(y[idx], minlength=10)
    print(f"{path}: {len(idx)} samples, 64 features, per class {' '.join(map(str, counts))}")
