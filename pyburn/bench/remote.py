"""The remote device over loopback: a `pyburn serve --device cpu` subprocess against local cpu,
in the same run.

Three costs: one round trip (an op and the read of its one-element result), batched op
throughput (100 queued ops, then one read: the batching pays the round trip once), and the
MNIST MLP's training step (autodiff on the client, every op of the step sent to the server).
"""

from __future__ import annotations

from collections.abc import Callable

import pyburn

from ..backends import remote
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


def measure_remote(settings: Settings) -> list[Row]:
    """Round trip, batched ops and MLP training steps on remote(cpu) against local cpu."""
    batch = QUICK_BATCH if settings.quick else BATCH
    images, labels = Floats.random((batch, 1, 28, 28), seed=1), labels_for(batch)
    rows = []
    with ServerProcess("cpu") as server:
        served, local = pyburn.device(server.address), pyburn.device("cpu")
        cases = (("round trip: (x + 1).item(), 1 element", "us", _round_trip,
                  lambda seconds: seconds * 1e6, None),
                 (f"{OPS} queued a + 1, then one read", "ops/s", _batched,
                  lambda seconds: OPS / seconds, None))
        for case, unit, make, per_call, target in cases:
            times = measure({"pyburn": make(served), "local": make(local)}, settings)
            rows.append(Row.compare("remote.cpu", case, unit, per_call, times, "local",
                                    "local cpu", target, settings.quick))
        steps = {"pyburn": pyburn_trainer("mlp", images, labels, server.address)[1],
                 "local": pyburn_trainer("mlp", images, labels, "cpu")[1]}
        times = measure(steps, settings)
        rows.append(Row.compare("remote.cpu", f"MNIST MLP training step, batch {batch}",
                                "samples/s", lambda seconds: batch / seconds, times, "local",
                                "local cpu", TRAIN_TARGET, settings.quick))
        rows.append(_bytes_per_step(server.address, images, labels, batch, settings.quick))
    return rows


def _bytes_per_step(address: str, images: Floats, labels: list[int], batch: int,
                    quick: bool) -> Row:
    """KB the client sends per MLP training step from step 2 on, against step 1 (the model
    and the batch are sent before: their bytes are not counted)."""
    _, step = pyburn_trainer("mlp", images, labels, address)
    backend = pyburn.device(address).backend
    assert isinstance(backend, remote.RemoteBackend)
    backend.flush()
    counted = []
    for _ in range(4):
        before = backend.bytes_sent
        step()
        backend.flush()
        counted.append((backend.bytes_sent - before) / 1024)
    later = sum(counted[1:]) / len(counted[1:])
    return Row("remote.cpu", f"KB sent per MLP step from step 2 on, batch {batch}", "KB",
               later, min(counted[1:]), "step 1", counted[0], counted[0] / later,
               BYTES_TARGET, quick)


BENCHMARKS = (
    Benchmark("remote", "cpu", "a pyburn serve subprocess over loopback: round trip, batched "
              "ops, MLP training steps, vs local cpu", measure_remote,
              requires=remote.REGISTRATION.unavailable_reason),
)
