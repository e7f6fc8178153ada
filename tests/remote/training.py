"""The small MLP the remote device's tests train, from one set of starting weights, and its
losses step by step: what a client computes on a server must equal local cpu's."""

from __future__ import annotations

import numpy as np

import pyburn
from pyburn import nn, optim


def mlp() -> nn.Module:
    """6 -> 8 -> 3 with a ReLU."""
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


pyburn.manual_seed(0)
#: one set of starting weights for every client (threads share the default generator)
WEIGHTS = {k: v.numpy() for k, v in mlp().state_dict().items()}


def mlp_losses(device: pyburn.Device, steps: int = 4) -> list[float]:
    """The loss of each of `steps` Adam steps of the MLP from `WEIGHTS` on fixed data."""
    model = mlp().to(device)
    model.load_state_dict({k: pyburn.from_numpy(v, device=device) for k, v in WEIGHTS.items()})
    opt = optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(1)
    x = pyburn.from_numpy(rng.standard_normal((16, 6)).astype(np.float32), device=device)
    y = pyburn.from_numpy(rng.integers(0, 3, 16).astype(np.int32), device=device)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
