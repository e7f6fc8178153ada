"""Data-parallel training on Ray (`pyburn.distributed`): samples/s of the MNIST MLP and CNN
trained by a `Learner` with ``strategy=Ray(n)`` on 1 and on 2 cpu workers, and the share of
a worker's step time spent communicating (bucketed gradient all-reduces through the object
store, and waiting for the other worker).

Each worker trains on batches of 64 synthetic images (the global batch is 64 per worker),
one epoch, Adam; speeds are measured by the workers (from the start to the end of their
training loop: startup and shipping are left out). Rows: one worker against the same
Learner without a strategy in this process (the cost of the Ray path), and two workers
against one (the scaling; on a machine with 2 cores, both workers share them with Ray).
Ray workers run numpy's BLAS on one thread each (Ray's default for a 1-CPU actor); the
in-process peer on as many as numpy uses. Needs ``pip install 'pyburn[distributed]'``.
"""

from __future__ import annotations

import importlib.util
import time
from typing import Any

import pyburn

from ..data import DataLoader, TensorDataset
from ..distributed import Ray
from ..models import MnistCNN, MnistMLP
from ..nn import functional as F
from ..optim import Adam
from ..train import Learner, Renderer
from .inputs import Floats
from .report import Row
from .suite import Benchmark
from .train import LR, labels_for

BATCH = 64
#: batches per worker of two (the dataset: BATCH * 2 * STEPS images); a quick run's
STEPS, QUICK_STEPS = 16, 2
MODELS = (("mlp", "MNIST MLP 784-128-10"), ("cnn", "MNIST CNN (demo)"))


def _learner(kind: str, strategy: Any) -> Learner:
    pyburn.manual_seed(0)
    device = pyburn.device("cpu").autodiff()
    model = MnistMLP(device=device) if kind == "mlp" else MnistCNN(device=device)
    return Learner(model, Adam(model.parameters(), lr=LR), F.cross_entropy,
                   renderer=Renderer(), strategy=strategy)


def _loader(samples: int) -> DataLoader:
    images = Floats.random((samples, 1, 28, 28), seed=1).tensor("cpu")
    labels = pyburn.tensor(labels_for(samples), dtype=pyburn.int32, device="cpu")
    return DataLoader(TensorDataset(images, labels), batch_size=BATCH, shuffle=True, seed=0)


def _in_process(kind: str, samples: int) -> float:
    """Samples/s of the Learner without a strategy."""
    learner, loader = _learner(kind, None), _loader(samples)
    started = time.perf_counter()
    learner.fit(loader, epochs=1)
    return samples / (time.perf_counter() - started)


def _on_workers(kind: str, samples: int, workers: int) -> tuple[float, float, float]:
    """Samples/s of `workers` Ray workers, and the milliseconds per step they spent
    communicating and in all (means over the workers)."""
    strategy = Ray(workers, seed=0)
    _learner(kind, strategy).fit(_loader(samples), epochs=1)
    stats = strategy.stats
    done = sum(s["steps"] * s["batch_size"] for s in stats)
    per_step = [(1e3 * s["comm_seconds"] / s["steps"], 1e3 * s["seconds"] / s["steps"])
                for s in stats]
    return (done / max(s["seconds"] for s in stats),
            sum(c for c, _ in per_step) / len(stats), sum(t for _, t in per_step) / len(stats))


def _communication(case: str, workers: int, comm_ms: float, step_ms: float,
                   quick: bool) -> Row:
    """The row of the time a step spends communicating, against the whole step (the ratio:
    how many times longer the step is)."""
    return Row("distributed.cpu", f"{case}: communication on {workers} worker"
               f"{'s' if workers > 1 else ''} ({100 * comm_ms / step_ms:.0f}% of a step)",
               "ms/step", comm_ms, comm_ms, "the whole step", step_ms, step_ms / comm_ms,
               None, quick)


def requires() -> str | None:
    """Why this benchmark cannot run here: Ray missing."""
    if importlib.util.find_spec("ray") is None:
        return "needs Ray: pip install 'pyburn[distributed]'"
    return None


def measure_cpu(settings: Any) -> list[Row]:
    """Samples/s on 1 and 2 Ray workers, and the communication share, per model."""
    import ray  # optional: ray (pyburn[distributed])

    started_here = not ray.is_initialized()
    if started_here:  # one local cluster for every case: starting one takes seconds
        ray.init(address="local", num_cpus=2, include_dashboard=False,
                 _node_ip_address="127.0.0.1", configure_logging=False, log_to_driver=False)
    rows = []
    try:
        for kind, label in MODELS[:1] if settings.quick else MODELS:  # quick: a smoke test
            samples = BATCH * 2 * (QUICK_STEPS if settings.quick else STEPS)
            alone = _in_process(kind, samples)
            one, one_comm, one_step = _on_workers(kind, samples, 1)
            two, two_comm, two_step = _on_workers(kind, samples, 2)
            case = f"{label}, batch {BATCH} per worker, Adam, {samples} samples"
            rows += [
                Row("distributed.cpu", f"{case}, 1 worker", "samples/s", one, one,
                    "no strategy, in process", alone, one / alone, None, settings.quick),
                Row("distributed.cpu", f"{case}, 2 workers", "samples/s", two, two,
                    "1 worker", one, two / one, None, settings.quick),
                _communication(case, 1, one_comm, one_step, settings.quick),
                _communication(case, 2, two_comm, two_step, settings.quick),
            ]
    finally:
        if started_here:
            ray.shutdown()
    return rows


BENCHMARKS = (
    Benchmark("distributed", "cpu", "Learner on Ray: MNIST MLP and CNN samples/s on 1 and 2 "
              "workers, and the communication share", measure_cpu, requires),
)
