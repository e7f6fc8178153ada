"""Training throughput: samples/s of one training step of the MNIST models on cpu, against the
same model in PyTorch CPU, in the same run.

A step is what a training loop does per batch: zero the gradients, forward, cross-entropy,
backward, one Adam update. Both frameworks start from the same weights (pyburn's, loaded into
a PyTorch twin with the same layers through numpy), train on the same synthetic batch (64
float32 images (1, 28, 28) and labels; the values do not change the work), and run with the
same number of threads: PyTorch gets as many as numpy's BLAS uses (`blas_threads`), so
``OPENBLAS_NUM_THREADS=1 pyburn bench train`` compares both on one thread.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pyburn

from ..models import MEAN, STD, MnistCNN, MnistMLP
from ..nn import Module
from ..nn import functional as F
from ..optim import Adam
from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

Step = Callable[[], Any]

BATCH = 64
QUICK_BATCH = 2
LR = 1e-3
#: each model, how the report names it, and the ratio to PyTorch it should reach (issue 4)
CASES = (("mlp", "MNIST MLP 784-128-10", Target("ratio", at_least=True, bound=1.0)),
         ("cnn", "MNIST CNN (demo)", Target("ratio", at_least=True, bound=0.7)))


def blas_threads() -> int:
    """The threads numpy's BLAS runs on: ``$OPENBLAS_NUM_THREADS`` or ``$OMP_NUM_THREADS``
    when set (OpenBLAS reads them at load time), else one per CPU, OpenBLAS's default."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


def _pyburn_model(kind: str, device: pyburn.Device) -> Module:
    pyburn.manual_seed(0)
    return MnistMLP(device=device) if kind == "mlp" else MnistCNN(device=device)


def torch_twin(model: Module, torch: Any) -> Any:
    """A PyTorch module that computes what `model` (an `MnistMLP` or `MnistCNN`) computes,
    with the same parameter names and a copy of its weights and buffers."""
    nn, tf = torch.nn, torch.nn.functional
    config = model.config()

    class Twin(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if config["model"] == "mlp":
                self.fc1 = nn.Linear(28 * 28, config["hidden"])
            else:
                c1, c2 = config["channels"]
                self.conv1 = nn.Conv2d(1, c1, 3, padding=1, bias=False)
                self.bn1 = nn.BatchNorm2d(c1)
                self.conv2 = nn.Conv2d(c1, c2, 3, padding=1, bias=False)
                self.bn2 = nn.BatchNorm2d(c2)
                self.fc1 = nn.Linear(c2 * 7 * 7, config["hidden"])
            self.fc2 = nn.Linear(config["hidden"], 10)

        def forward(self, images: Any) -> Any:
            x = (images - MEAN) / STD
            if config["model"] == "cnn":
                x = tf.relu(tf.max_pool2d(self.bn1(self.conv1(x)), 2))
                x = tf.relu(tf.max_pool2d(self.bn2(self.conv2(x)), 2))
            return self.fc2(tf.relu(self.fc1(x.flatten(1))))

    twin = Twin()
    twin.load_state_dict({name: torch.from_numpy(value.numpy().copy())
                          for name, value in model.state_dict().items()})
    return twin


def labels_for(batch: int) -> list[int]:
    """`batch` class labels, the same every run."""
    draw = random.Random(3).randrange
    return [draw(10) for _ in range(batch)]


def pyburn_trainer(kind: str, images: Floats, labels: list[int],
                   device: str = "cpu") -> tuple[Module, Step]:
    """The pyburn model ("mlp" or "cnn") on `device`'s autodiff form, and a function doing
    one training step on `images` and `labels` (``pyburn bench web`` runs it in a browser on
    wgpu and flex)."""
    trainer = pyburn.device(device).autodiff()
    model = _pyburn_model(kind, trainer)
    optimizer = Adam(model.parameters(), lr=LR)
    x = images.tensor(device).to(trainer)
    y = pyburn.tensor(labels, dtype=pyburn.int32, device=trainer)

    def step() -> pyburn.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return model, step


def torch_trainer(kind: str, images: Floats, labels: list[int],
                  torch: Any, device: str = "cpu") -> tuple[Any, Step]:
    """The PyTorch twin of `pyburn_trainer`'s model, with the same starting weights, and a
    function doing the same training step, on torch's `device` ("cpu", "cuda")."""
    model = torch_twin(_pyburn_model(kind, pyburn.device("cpu")), torch).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    x = images.torch(torch).to(device)
    y = torch.tensor(labels, dtype=torch.int64, device=device)
    loss_fn = torch.nn.functional.cross_entropy

    def step() -> None:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return model, step


def measure_cpu(settings: Settings) -> list[Row]:
    """Training samples/s of the MNIST MLP and CNN on cpu, against PyTorch CPU (a missing
    PyTorch is reported, not timed)."""
    batch = QUICK_BATCH if settings.quick else BATCH
    images = Floats.random((batch, 1, 28, 28), seed=1)
    labels = labels_for(batch)
    torch = peers.load("torch")
    if torch is not None:
        torch.set_num_threads(blas_threads())
    rows = []
    for kind, label, target in CASES:
        candidates = {"pyburn": pyburn_trainer(kind, images, labels)[1]}
        if torch is not None:
            candidates["torch"] = torch_trainer(kind, images, labels, torch)[1]
        times = measure(candidates, settings)
        threads = blas_threads()
        case = f"{label}, batch {batch}, Adam, {threads} thread{'s' if threads > 1 else ''}"
        rows.append(Row.compare("train.cpu", case, "samples/s",
                                lambda seconds: batch / seconds, times, "torch",
                                peers.label("torch"), target, settings.quick))
    return rows


BENCHMARKS = (
    Benchmark("train", "cpu", "MNIST MLP and CNN training steps, samples/s vs PyTorch CPU",
              measure_cpu),
)
