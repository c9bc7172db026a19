"""A multi-layer perceptron in PyTorch (CPU, float64) for `[job] kind = "python"`: the network of
outrun's built-in `model.loss = "softmax"` with `hidden = [...]` (ReLU hidden layers, a softmax
cross-entropy over `classes`), so the two can be compared run for run (mlp-torch.toml).

Options (`[job.options]`): `hidden` (the hidden layers' widths, default [128]) and `classes`.
The parameters are laid out as torch.nn.Linear keeps them and as outrun's network does: for each
layer from the input, W (outputs x inputs, row-major) then b. theta_0 is torch's default
initialisation under `seed` (model.init_path replaces it, e.g. to start from the built-in's).
"""

import numpy as np
import torch

# one thread per rank: the ranks share the cores
torch.set_num_threads(1)

net = None


def init(options, seed, features):
    global net
    sizes = [features] + [int(h) for h in options.get("hidden", [128])] + [int(options["classes"])]
    torch.manual_seed(seed)
    layers = []
    for k in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[k], sizes[k + 1], dtype=torch.float64))
        if k + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    return torch.nn.utils.parameters_to_vector(net.parameters()).detach().numpy()


def _logits(theta, X):
    torch.nn.utils.vector_to_parameters(torch.from_numpy(theta), net.parameters())
    return net(torch.from_numpy(X))


def grad(theta, X, y, w):
    """g = sum_k w_k grad CE(theta; x_k, y_k), loss = sum_k w_k CE(theta; x_k, y_k)."""
    net.zero_grad(set_to_none=True)
    per_row = torch.nn.functional.cross_entropy(_logits(theta, X), torch.from_numpy(y).long(), reduction="none")
    loss = (torch.from_numpy(w) * per_row).sum()
    loss.backward()
    g = torch.cat([p.grad.reshape(-1) for p in net.parameters()])
    return g.numpy(), loss.item()


def evaluate(theta, X, y):
    with torch.no_grad():
        z = _logits(theta, X)
        labels = torch.from_numpy(y).long()
        loss = torch.nn.functional.cross_entropy(z, labels).item()
        accuracy = (z.argmax(dim=1) == labels).double().mean().item()
    return {"accuracy": accuracy, "loss": loss}
