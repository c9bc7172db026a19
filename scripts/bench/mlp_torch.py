#!/usr/bin/env python3
"""make bench §10: the same batch gradient as `outrun bench mlp` in PyTorch on the CPU (float64,
one thread): nn.Sequential of Linear/ReLU layers, cross-entropy summed over the batch, backward
through autograd, best of the repetitions. Prints CSV: sizes,batch,torch_ms,torch_gflops.

    python3 scripts/bench/mlp_torch.py 784,200,200,10 64,256,1024 20
"""
import sys, time

import torch

torch.set_num_threads(1)
sizes = [int(v) for v in sys.argv[1].split(",")]
batches = [int(v) for v in sys.argv[2].split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
layers = []
for k, (i, o) in enumerate(zip(sizes, sizes[1:])):
    layers.append(torch.nn.Linear(i, o, dtype=torch.float64))
    if k + 2 < len(sizes):
        layers.append(torch.nn.ReLU())
net = torch.nn.Sequential(*layers)
loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
for b in batches:
    x = (torch.arange(b * sizes[0], dtype=torch.float64) % 257 / 257.0).reshape(b, sizes[0])
    y = torch.arange(b) % sizes[-1]
    flops = sum(4 * b * i * o for i, o in zip(sizes, sizes[1:])) + sum(2 * b * i * o for i, o in zip(sizes[1:], sizes[2:]))
    best = float("inf")
    for _ in range(reps):
        net.zero_grad(set_to_none=False)
        t0 = time.perf_counter()
        loss_fn(net(x), y).backward()
        best = min(best, time.perf_counter() - t0)
    print(f"{'-'.join(map(str, sizes))},{b},{best * 1e3:.3f},{flops / best / 1e9:.2f}")
