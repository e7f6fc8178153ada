"""burn-bench's all_reduce: the sum of float32 tensors over 2 ranks on cpu, against PyTorch's
``torch.distributed`` with the gloo backend, in the same run.

Each rank is a Ray actor (two for pyburn, two for the peer; ``num_cpus=0``, so that they
coexist in a cluster of any size): pyburn's ranks join a `pyburn.distributed` group (the sum
goes through Ray's object store, or inside the rendezvous calls for small tensors); the
peer's ranks join a gloo process group that meets on 127.0.0.1 (gloo's own sockets take
the address the host name resolves to) and sum in place with ``dist.all_reduce``, as DDP
does. Every rank holds one random tensor of the case's
shape and times itself (a barrier, then a run of all-reduces, garbage collector off); a
run's time is its slower rank's. Runs of pyburn and the peer are interleaved, as in every
benchmark (`timing.measure_runs`).

Rows per shape: the time of one all-reduce, and the algorithm bandwidth (the tensor's bytes
over that time, NCCL tests' "algbw"). Shapes are burn-bench's, [32, 512, 1024] (64 MiB) and
[128, 512, 2048] (512 MiB); small ones at ``--size small`` (8 KiB, inside the rendezvous
calls, and 128 KiB, through the object store). No targets: reported. Needs Ray
(``pip install 'pyburn[distributed]'``); without PyTorch the peer is "not installed".
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import pyburn

from .. import distributed
from . import peers
from .distributed import requires
from .inputs import described
from .report import Row
from .suite import Benchmark
from .timing import Settings, Timer, Timing, measure_runs, timed_run

Shape = tuple[int, ...]
#: burn-bench's shapes, and this family's at ``--size small``
SHAPES: tuple[Shape, ...] = ((32, 512, 1024), (128, 512, 2048))
QUICK_SHAPES: tuple[Shape, ...] = ((4, 16, 32), (8, 32, 128))
RANKS = 2
#: the longest any one wait may take, seconds: a group's start, a run of all-reduces
WAIT_S = 300.0


class Group(Protocol):
    """A rank's part in its group, whichever framework's."""

    def rand(self, shape: Shape) -> Any:
        """A uniform random float32 tensor of `shape`."""

    def all_reduce(self, x: Any) -> None:
        """The sum of every rank's `x`."""

    def barrier(self) -> None:
        """Return once every rank is here."""


class PyburnGroup:
    """A rank of a `pyburn.distributed` group named `where`."""

    def __init__(self, rank: int, where: str):
        distributed.init(rank, RANKS, where, timeout=WAIT_S)

    def rand(self, shape: Shape) -> Any:
        """A uniform random float32 tensor on cpu."""
        return pyburn.rand(*shape, device="cpu")

    def all_reduce(self, x: Any) -> None:
        """The sum of every rank's `x` (a new tensor, dropped)."""
        distributed.all_reduce(x, "sum")

    def barrier(self) -> None:
        """Return once every rank is here."""
        distributed.barrier()


class TorchGroup:
    """A rank of a gloo process group that meets at `where` (``tcp://127.0.0.1:PORT``)."""

    def __init__(self, rank: int, where: str):
        import torch.distributed as dist  # optional: the peer (torch)

        self.dist = dist
        dist.init_process_group("gloo", init_method=where, rank=rank, world_size=RANKS,
                                timeout=datetime.timedelta(seconds=WAIT_S))

    def rand(self, shape: Shape) -> Any:
        """A uniform random float32 tensor."""
        import torch  # optional: the peer (torch)

        return torch.rand(shape)

    def all_reduce(self, x: Any) -> None:
        """The sum of every rank's `x`, into `x` (the sums grow to inf over many calls, which
        costs the same)."""
        self.dist.all_reduce(x)

    def barrier(self) -> None:
        """Return once every rank is here."""
        self.dist.barrier()


#: each framework's `Group`, made from a rank and where its group meets
GROUPS: dict[str, Callable[[int, str], Group]] = {"pyburn": PyburnGroup, "torch": TorchGroup}


class Rank:
    """One rank, the body of a Ray actor: joins a group, holds a tensor, times all-reduces."""

    def join(self, framework: str, rank: int, where: str) -> None:
        """Join the group of `framework` ("pyburn" or "torch") that meets at `where`."""
        self.group = GROUPS[framework](rank, where)

    def hold(self, shape: Shape) -> None:
        """Make the random tensor of `shape` the all-reduces take."""
        self.x = self.group.rand(shape)

    def run(self, calls: int) -> float:
        """Seconds taken by `calls` all-reduces, timed from a barrier."""
        self.group.barrier()
        return timed_run(lambda: self.group.all_reduce(self.x), calls)


@contextlib.contextmanager
def cluster() -> Iterator[Any]:
    """The ray module, with a local cluster on 127.0.0.1 started for the block (and shut
    down after it) unless one is running already."""
    import ray  # optional: ray (pyburn[distributed])

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                 _node_ip_address="127.0.0.1", configure_logging=False, log_to_driver=False)
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


def _meeting_point(framework: str) -> str:
    """Where a new group of `framework` meets: a group name unique to this run for pyburn, a
    free port on 127.0.0.1 for gloo."""
    if framework == "pyburn":
        return f"pyburn-bench-all-reduce-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{probe.getsockname()[1]}"


def _join(ray: Any, groups: dict[str, list[Any]]) -> None:
    """Put each framework's actors in a new group of that framework, all at once."""
    joins = []
    for who, ranks in groups.items():
        where = _meeting_point(who)
        joins += [a.join.remote(who, r, where) for r, a in enumerate(ranks)]
    ray.get(joins, timeout=WAIT_S)


def _timer(ray: Any, ranks: Sequence[Any]) -> Timer:
    """A run of all-reduces on `ranks`: its seconds are the slower rank's."""
    return lambda calls: max(ray.get([a.run.remote(calls) for a in ranks], timeout=WAIT_S))


def _rows(shape: Shape, times: dict[str, Timing], quick: bool) -> list[Row]:
    """The time of one all-reduce of `shape`, and its algorithm bandwidth."""
    nbytes = 4 * math.prod(shape)
    what = f"all_reduce(sum) over {RANKS} Ray workers, {described(shape)}"
    peer = f"{peers.label('torch')} gloo"
    return [Row.compare("all_reduce.cpu", what, "ms", lambda s: s * 1e3, times, "torch", peer,
                        None, quick),
            Row.compare("all_reduce.cpu", f"{what}: algorithm bandwidth", "MB/s",
                        lambda s: nbytes / s / 1e6, times, "torch", peer, None, quick)]


def measure_cpu(settings: Settings) -> list[Row]:
    """Time and bandwidth of a 2-rank sum per shape, pyburn against gloo."""
    frameworks = ["pyburn"] + (["torch"] if peers.load("torch") is not None else [])
    rows = []
    with cluster() as ray:
        groups = {who: [ray.remote(num_cpus=0)(Rank).remote() for _ in range(RANKS)]
                  for who in frameworks}
        try:
            _join(ray, groups)
            for shape in QUICK_SHAPES if settings.quick else SHAPES:
                ray.get([a.hold.remote(shape) for ranks in groups.values() for a in ranks],
                        timeout=WAIT_S)
                times = measure_runs({who: _timer(ray, ranks) for who, ranks in groups.items()},
                                     settings)
                rows += _rows(shape, times, settings.quick)
        finally:
            for ranks in groups.values():
                for actor in ranks:
                    ray.kill(actor, no_restart=True)
    return rows


BENCHMARKS = (
    Benchmark("all_reduce", "cpu", "burn-bench's all_reduce: the sum of float32 tensors over "
              "2 Ray workers, ms and MB/s, vs torch.distributed (gloo)", measure_cpu, requires),
)
