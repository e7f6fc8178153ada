"""Train the example app's model and export it to ONNX: `examples/web/points/model.onnx`.

A small MLP learns which of three interleaved spirals a 2-D point belongs to (a few hundred
Adam steps, a second or two on a CPU), and `pyburn.onnx.export` writes it with a dynamic batch
axis. The app in `points/` loads that file in the browser and classifies points with it.

    python examples/web/export_model.py                # writes examples/web/points/model.onnx
    pyburn web build examples/web/points -o build/points-site
    pyburn web serve build/points-site                 # open http://127.0.0.1:8000/
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pyburn
from pyburn import nn, onnx, optim

HERE = Path(__file__).resolve().parent
CLASSES = 3


def spirals(count: int, generator: pyburn.Generator,
            device: pyburn.Device) -> tuple[pyburn.Tensor, pyburn.Tensor]:
    """`count` points of each of three spiral arms, with a little noise, and their arms."""
    radius = pyburn.linspace(0.05, 1.0, count, device=device)
    points, labels = [], []
    for arm in range(CLASSES):
        angle = radius * 4.0 + arm * (2 * math.pi / CLASSES)
        angle = angle + pyburn.randn(count, generator=generator, device=device) * 0.15
        points.append(pyburn.stack([radius * angle.cos(), radius * angle.sin()], dim=1))
        labels.append(pyburn.full((count,), arm, dtype="int64", device=device))
    return pyburn.cat(points), pyburn.cat(labels)


def model(device: pyburn.Device) -> nn.Module:
    """The classifier: 2 -> 32 -> 32 -> 3, ReLU between."""
    return nn.Sequential(nn.Linear(2, 32, device=device), nn.ReLU(),
                         nn.Linear(32, 32, device=device), nn.ReLU(),
                         nn.Linear(32, CLASSES, device=device))


def train(steps: int, seed: int = 0) -> tuple[nn.Module, float]:
    """The trained classifier (on the default device, with autodiff) and its accuracy on the
    training points."""
    pyburn.manual_seed(seed)
    device = pyburn.default_device().autodiff()
    points, labels = spirals(200, pyburn.Generator(seed), device)
    net = model(device)
    adam = optim.Adam(net.parameters(), lr=0.01)
    for _ in range(steps):
        loss = nn.functional.cross_entropy(net(points), labels)
        adam.zero_grad()
        loss.backward()
        adam.step()
    with pyburn.no_grad():
        accuracy = (net(points).argmax(dim=1) == labels).float().mean().item()
    return net, accuracy


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600, help="Adam steps (default 600)")
    parser.add_argument("--out", type=Path, default=HERE / "points" / "model.onnx")
    args = parser.parse_args()
    net, accuracy = train(args.steps)
    example = pyburn.zeros(1, 2, device=net[0].weight.device)
    onnx.export(net, example, args.out, input_names=["points"], output_names=["logits"],
                dynamic_axes={"points": [0], "logits": [0]})
    print(f"{args.out}: {accuracy:.1%} of the training points right")


if __name__ == "__main__":
    main()
