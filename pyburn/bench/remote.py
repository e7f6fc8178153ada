"""The remote device over loopback: a `pyburn serve --device cpu` subprocess against local cpu,
in the same run.

Three costs: one round trip (an op and the read of its one-element result), batched op
throughput (100 queued ops, then one read: the batching pays the round trip once), and the
MNIST MLP's training (autodiff on the client, every op of each step sent to the server; ten
steps, then a read of the loss), with the bytes a step sends.
"""

from __future__ import annotations

from collections.abc import Callable

import pyburn

from ..backends import remote
from ..models import MnistMLP
from ..nn import functional as F
from ..optim import Adam
from ..remote.process import ServerProcess
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure
from .train import BATCH, QUICK_BATCH, labels_for, pyburn_trainer

#: the training step on remote(cpu) against local cpu (issue 15's goal, with graph replay)
TRAIN_TARGET = Target("ratio", at_least=True, bound=0.8)
#: a later step sends at most 5% of the first step's bytes (issue 15's goal)
BYTES_TARGET = Target("ratio", at_least=True, bound=20.0)
OPS = 100
#: training steps per timed call (then the loss is read)
STEPS = 10


def _round_trip(device: pyburn.Device) -> Callable[[], object]:
    x = pyburn.ones(1, device=device)
    return lambda: (x + 1).item()


def _batched(device: pyburn.Device) -> Callable[[], object]:
    x = pyburn.ones(1, device=device)

    def run() -> float:
        y = x
        for _ in range(OPS):
            y = y + 1
        return y.item()

    return run


def _steps(device: str, images: Floats, labels: list[int]) -> Callable[[], object]:
    """`STEPS` training steps, then a read of the last loss (what a loop that logs every
    `STEPS` steps does): the time includes the server's work, not only the queueing."""
    step = pyburn_trainer("mlp", images, labels, device)[1]

    def run() -> float:
        for _ in range(STEPS - 1):
            step()
        return step().item()

    return run


def measure_remote(settings: Settings) -> list[Row]:
    """Round trip, batched ops and MLP training steps on remote(cpu) against local cpu."""
    batch = QUICK_BATCH if settings.quick else BATCH
    images, labels = Floats.random((batch, 1, 28, 28), seed=1), labels_for(batch)
    rows = []
    # one BLAS thread on the server: the client, on this same machine, needs a core too
    with ServerProcess("cpu", "--cpu-threads", "1") as server:
        served, local = pyburn.device(server.address), pyburn.device("cpu")
        cases = (("round trip: (x + 1).item(), 1 element", "us", _round_trip,
                  lambda seconds: seconds * 1e6, None),
                 (f"{OPS} queued a + 1, then one read", "ops/s", _batched,
                  lambda seconds: OPS / seconds, None))
        for case, unit, make, per_call, target in cases:
            times = measure({"pyburn": make(served), "local": make(local)}, settings)
            rows.append(Row.compare("remote.cpu", case, unit, per_call, times, "local",
                                    "local cpu", target, settings.quick))
        steps = {"pyburn": _steps(server.address, images, labels),
                 "local": _steps("cpu", images, labels)}
        times = measure(steps, settings)
        rows.append(Row.compare("remote.cpu", f"MNIST MLP training, {STEPS} steps then a read "
                                f"of the loss, batch {batch}", "samples/s",
                                lambda seconds: STEPS * batch / seconds, times, "local",
                                "local cpu", TRAIN_TARGET, settings.quick))
        rows.extend(_bytes_per_step(server.address, images, labels, batch, settings.quick))
    return rows


def _bytes_per_step(address: str, images: Floats, labels: list[int], batch: int,
                    quick: bool) -> list[Row]:
    """KB the client sends per MLP training step from step 2 on, against step 1, the batch
    excluded (it is uploaded before): against step 1 with the move of the model to the
    device, as a program does it (the goal), and against step 1's ops alone."""
    device = pyburn.device(address).autodiff()
    backend = device.backend
    assert isinstance(backend, remote.RemoteBackend)
    x = images.tensor(address).to(device)
    y = pyburn.tensor(labels, dtype=pyburn.int32, device=device)
    backend.flush()
    start = backend.bytes_sent
    model = MnistMLP().to(device)
    backend.flush()
    moved = (backend.bytes_sent - start) / 1024
    optimizer = Adam(model.parameters(), lr=1e-3)
    counted = []
    for _ in range(STEPS):
        before = backend.bytes_sent
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        backend.flush()
        counted.append((backend.bytes_sent - before) / 1024)
    later, best = sum(counted[1:]) / len(counted[1:]), min(counted[1:])
    case = f"KB sent per MLP step from step 2 on, batch {batch}"
    return [Row("remote.cpu", case, "KB", later, best, "step 1 with the model's move",
                moved + counted[0], (moved + counted[0]) / later, BYTES_TARGET, quick,
                tuple(counted[1:])),
            Row("remote.cpu", case, "KB", later, best, "step 1's ops alone", counted[0],
                counted[0] / later, None, quick, tuple(counted[1:]))]


BENCHMARKS = (
    Benchmark("remote", "cpu", "a pyburn serve subprocess over loopback: round trip, batched "
              "ops, MLP training steps, vs local cpu", measure_remote,
              requires=remote.REGISTRATION.unavailable_reason),
)
