#!/usr/bin/env python3
"""Write the real-digits data set of configs/real-digits.toml: the handwritten digits 4 and 9 of
scikit-learn's bundled `digits` (a copy of the test set of the UCI "Optical Recognition of
Handwritten Digits" data, E. Alpaydin and C. Kaynak, 1998; CC BY 4.0; 8×8 images, pixels
0..16), as LIBSVM files: label 1 for a 9, 0 for a 4 (logistic regression, as the CR paper's
GISETTE task separates 4 from 9), 64 features scaled to [0, 1], zeros omitted, a seeded 80/20
split into data/digits-4-9-train.libsvm and data/digits-4-9-test.libsvm.

    python3 -m pip install scikit-learn   # once (it ships the data; no download)
    python3 scripts/data/digits.py [OUT_DIR]
"""
import os, sys

import numpy as np
from sklearn.datasets import load_digits

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "data")
d = load_digits()
keep = (d.target == 4) | (d.target == 9)
x, y = d.data[keep] / 16.0, (d.target[keep] == 9).astype(int)
order = np.random.RandomState(49).permutation(len(y))
cut = int(round(0.8 * len(y)))
for name, idx in (("train", order[:cut]), ("test", order[cut:])):
    path = os.path.join(out, f"digits-4-9-{name}.libsvm")
    with open(path, "w") as f:
        for i in idx:
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(x[i]) if v != 0)
            f.write(f"{y[i]} {feats}\n")
    print(f"{path}: {len(idx)} samples ({int(y[idx].sum())} nines, {len(idx) - int(y[idx].sum())} fours), 64 features")
