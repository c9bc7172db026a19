#!/usr/bin/env python3
"""The test accuracy scikit-learn reaches on the ten digits (data/digits-{train,test}.libsvm)
with random Fourier features and ridge regression — RBFSampler(gamma = 1/(2σ²), n_components =
q) and Ridge(alpha, no intercept) on the one-hot labels, predicting the largest output — with
configs/rff-digits.toml's q, σ and alpha = model.l2 · d, over 10 draws of the features.
crates/cli/tests/mpi_real_data.rs checks that outrun's run reaches it within 1 point.

    python3 -m pip install scikit-learn
    python3 scripts/oracles/rff_sklearn.py > crates/cli/tests/data/rff_sklearn.txt
"""
import os

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import Ridge

root = os.path.join(os.path.dirname(__file__), "..", "..")
xtr, ytr = load_svmlight_file(os.path.join(root, "data/digits-train.libsvm"), n_features=64)
xte, yte = load_svmlight_file(os.path.join(root, "data/digits-test.libsvm"), n_features=64)
xtr, xte = xtr.toarray(), xte.toarray()
q, sigma, alpha = 500, 3.0, 0.01
acc = []
for seed in range(10):
    rff = RBFSampler(gamma=1 / (2 * sigma**2), n_components=q, random_state=seed)
    model = Ridge(alpha=alpha, fit_intercept=False).fit(rff.fit_transform(xtr), np.eye(10)[ytr.astype(int)])
    acc.append(float((model.predict(rff.transform(xte)).argmax(1) == yte).mean()))
print(f"# q = {q}, sigma = {sigma}, alpha = {alpha}: test accuracy over 10 feature draws (mean, std, each)")
print(repr(float(np.mean(acc))), repr(float(np.std(acc))))
print(" ".join(repr(a) for a in acc))
