"""Fit a noisy 1-d function with a small MLP: a `Module` written from scratch, full-batch Adam
with a cosine schedule, and the fit checked against the noise-free function.

    python examples/regression.py                 # the default device, a few seconds
    python examples/regression.py --device flex --steps 200   # pure Python: slower
    python examples/regression.py --quick         # a few steps: a smoke test

The data: y = sin(2x) + 0.3x + noise (standard deviation 0.1) at 512 points in [-3, 3]. A
model that learned the function, not the noise, ends with a training error near the noise's
variance (0.01) and a much smaller error against the true function.
"""

from __future__ import annotations

import argparse
import math

import pyburn
import pyburn.nn.functional as F
from pyburn import nn
from pyburn.optim import Adam
from pyburn.optim.lr_scheduler import CosineAnnealingLR

NOISE = 0.1


def target(x: pyburn.Tensor) -> pyburn.Tensor:
    """The function to learn."""
    return (2 * x).sin() + 0.3 * x


class Regressor(nn.Module):
    """1 -> hidden -> hidden -> 1 with tanh: smooth, as the function is."""

    def __init__(self, hidden: int = 64, device: pyburn.Device | None = None):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(1, hidden, device=device), nn.Tanh(),
                                    nn.Linear(hidden, hidden, device=device), nn.Tanh(),
                                    nn.Linear(hidden, 1, device=device))

    def forward(self, x: pyburn.Tensor) -> pyburn.Tensor:
        """Predictions (N, 1) for inputs (N, 1)."""
        return self.layers(x)


def main() -> None:
    """Make the data, fit, and compare the fit with the true function."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="default: the default device")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--quick", action="store_true", help="20 steps")
    args = parser.parse_args()
    steps = 20 if args.quick else args.steps

    pyburn.manual_seed(0)
    device = pyburn.device(args.device).autodiff()
    x = pyburn.linspace(-3, 3, 512, device=device).reshape(-1, 1)
    y = target(x) + NOISE * pyburn.randn(512, 1, device=device)  # the same on every device

    model = Regressor(device=device)
    optimizer = Adam(model.parameters(), lr=1e-2)
    scheduler = CosineAnnealingLR(optimizer, T_max=steps)
    for step in range(1, steps + 1):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % max(1, steps // 5) == 0 or step == steps:
            print(f"step {step:5d}  training mse {loss.item():.5f}")

    with pyburn.no_grad():
        grid = pyburn.linspace(-3, 3, 7, device=device).reshape(-1, 1)
        fit, truth = model(grid), target(grid)
        error = F.mse_loss(model(x), target(x)).item()
    print(f"mse against the noise-free function: {error:.5f} (noise variance "
          f"{NOISE ** 2:.5f}, rmse {math.sqrt(error):.4f})")
    print("    x    true     fit")
    for xv, tv, fv in zip(grid.reshape(-1).tolist(), truth.reshape(-1).tolist(),
                          fit.reshape(-1).tolist()):
        print(f"{xv:5.1f} {tv:7.3f} {fv:7.3f}")


if __name__ == "__main__":
    main()
