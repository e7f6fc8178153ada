"""What the distributed tests ship to Ray workers: an actor that runs collectives, a small
float64 regression problem, and a loss that kills its worker once."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import pyburn
import pyburn.distributed as dist
import pyburn.nn.functional as F
from pyburn import nn
from pyburn.data import DataLoader, TensorDataset


class Rank:
    """A Ray actor's body: joins a group and runs the collectives on its own tensor."""

    def ready(self) -> bool:
        return True

    def collectives(self, rank: int, world: int, group: str, device: str) -> dict[str, Any]:
        dist.init(rank, world, group, timeout=30.0)
        dtype = pyburn.float64 if "float64" in pyburn.device(device).caps else pyburn.float32
        x = pyburn.tensor(values(rank), dtype=dtype, device=device)
        out: dict[str, Any] = {op: dist.all_reduce(x, op) for op in dist.OPS}
        out["broadcast"] = dist.broadcast(x, src=1)
        out["all_gather"] = dist.all_gather(x)
        out["counts"] = dist.all_reduce(pyburn.tensor([rank + 1], device=device), "sum")
        # past INLINE_BYTES: through the object store
        out["large"] = dist.all_reduce(pyburn.full((20_000,), rank + 1.0, device=device), "max")
        dist.barrier()
        out["rank"], out["world"] = dist.rank(), dist.world_size()
        dist.destroy()
        return {k: [t.numpy() for t in v] if isinstance(v, list) else
                (v.numpy(), v.dtype.name, v.device.name) if isinstance(v, pyburn.Tensor) else v
                for k, v in out.items()}

    def skip_all_reduce(self, rank: int, group: str, timeout: float) -> str:
        """Rank 0 calls all_reduce, rank 1 skips it: the error rank 0 gets. init's barrier
        waits as long as a loaded machine may take to start both calls; the all_reduce
        under test waits `timeout`."""
        joined = dist.init(rank, 2, group, timeout=60.0)
        joined.timeout = joined.transport.timeout = timeout
        try:
            if rank == 0:
                dist.all_reduce(pyburn.ones(3, device="cpu"))
        except dist.CollectiveTimeout as error:
            return str(error)
        finally:
            dist.destroy()
        return "no error"


def values(rank: int) -> list[list[float]]:
    """Rank `rank`'s tensor of the collectives test."""
    return (np.arange(6.0).reshape(2, 3) * (rank + 1) - rank * 4.5).tolist()


N, FEATURES = 32, 3


def problem(batch_size: int, seed: int = 5) -> tuple[nn.Module, DataLoader]:
    """A float64 MLP on cpu and a shuffled loader of a regression problem."""
    pyburn.manual_seed(seed)
    dev = pyburn.device("cpu").autodiff()
    model = nn.Sequential(nn.Linear(FEATURES, 8, device=dev, dtype=pyburn.float64), nn.Tanh(),
                          nn.Linear(8, 1, device=dev, dtype=pyburn.float64))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, FEATURES))
    y = np.sin(x).sum(axis=1, keepdims=True)
    data = TensorDataset(pyburn.tensor(x, dtype=pyburn.float64, device="cpu"),
                         pyburn.tensor(y, dtype=pyburn.float64, device="cpu"))
    return model, DataLoader(data, batch_size=batch_size, shuffle=True, seed=seed)


class DyingLoss:
    """mse_loss, except that rank 1's worker exits at its `at`-th call, once (a marker file
    says it happened)."""

    def __init__(self, marker: str, at: int):
        self.marker, self.at, self.calls = marker, at, 0

    def __call__(self, output: pyburn.Tensor, target: pyburn.Tensor) -> pyburn.Tensor:
        self.calls += 1
        if (dist.is_initialized() and dist.rank() == 1 and self.calls == self.at
                and not os.path.exists(self.marker)):
            open(self.marker, "w").close()
            os._exit(1)
        return F.mse_loss(output, target)
