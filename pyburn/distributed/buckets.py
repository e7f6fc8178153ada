"""Gradient bucketing: all-reduce the gradients while the backward pass is still running.

The parameters are grouped, in reverse registration order (roughly the order in which a
backward pass finishes them: the last layer first), into buckets of about `bucket_mb`
megabytes, one dtype and device each. A post-accumulate-grad hook on every parameter counts
the gradients of its bucket; once a bucket has all of them, its all-reduce (op mean) starts,
as one flat tensor, while the backward pass goes on with the layers before. `synchronize`,
before the optimizer update, starts the buckets not started yet (parameters that got no
gradient, or a pass under `no_sync`), waits for all of them and puts the averaged gradients
back into ``.grad``.

A parameter without a gradient on some rank counts as a zero gradient there; one without a
gradient on every rank keeps ``.grad = None`` (a flag per parameter travels with the bucket).
Bucket collectives are keyed by (update, bucket), so ranks may finish the buckets in any
order.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .._tensor import Tensor
from ..errors import ArgumentError
from ..ops.creation import tensor, zeros_like
from ..ops.movement import cat
from ..tape import RemovableHandle, no_grad
from .group import ProcessGroup, Work

#: PyTorch DDP's default bucket size
DEFAULT_BUCKET_MB = 25.0


def plan_buckets(params: Iterable[Tensor], bucket_bytes: float) -> list[list[Tensor]]:
    """The parameters that require grad, each once, in reverse order, cut into buckets of
    about `bucket_bytes` (a bucket ends where the next parameter would take it past that,
    or where the dtype or the device changes)."""
    seen: set[int] = set()
    buckets: list[list[Tensor]] = []
    size = 0
    for p in reversed(list(params)):
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        nbytes = p.numel() * p.dtype.itemsize
        last = buckets[-1][-1] if buckets else None
        if (last is None or last.dtype is not p.dtype or last.device is not p.device
                or size + nbytes > bucket_bytes):
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += nbytes
    return buckets


class GradBuckets:
    """The gradients of `params`, averaged over `group` by buckets of about `bucket_mb` MB."""

    def __init__(self, params: Iterable[Tensor], group: ProcessGroup,
                 bucket_mb: float = DEFAULT_BUCKET_MB):
        self.group = group
        self.buckets = plan_buckets(params, bucket_mb * 2**20)
        self._where = {id(p): b for b, bucket in enumerate(self.buckets) for p in bucket}
        self._ready = [0] * len(self.buckets)
        self._work: list[Work[Tensor] | None] = [None] * len(self.buckets)
        self._update = 0
        self.syncing = True
        #: seconds spent packing, sending and waiting for gradients (the communication)
        self.comm_seconds = 0.0
        self._handles: list[RemovableHandle] = [
            p.register_post_accumulate_grad_hook(self._on_grad)
            for bucket in self.buckets for p in bucket]

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside: backward passes start no all-reduce (their gradients accumulate locally)."""
        previous, self.syncing = self.syncing, False
        try:
            yield
        finally:
            self.syncing = previous

    def _on_grad(self, p: Tensor) -> None:
        if not self.syncing:
            return
        b = self._where[id(p)]
        if self._work[b] is not None:
            raise ArgumentError(f"a gradient of bucket {b} changed after its all-reduce "
                                "started: run every backward pass before the last of an "
                                "update under no_sync()")
        self._ready[b] += 1
        if self._ready[b] == len(self.buckets[b]):
            self._start(b)

    def _start(self, b: int) -> None:
        started = time.perf_counter()
        bucket = self.buckets[b]
        with no_grad():
            grads = [(zeros_like(p) if p.grad is None else p.grad).reshape(-1) for p in bucket]
            flags = tensor([0.0 if p.grad is None else 1.0 for p in bucket],
                           dtype=bucket[0].dtype, device=bucket[0].device)
            flat = cat([*grads, flags])
        self._work[b] = self.group.all_reduce_async(flat, "mean", key=("grads", self._update, b))
        self.comm_seconds += time.perf_counter() - started

    def synchronize(self) -> None:
        """Finish every bucket's all-reduce and make each ``.grad`` the group's mean."""
        for b, work in enumerate(self._work):
            if work is None:
                self._start(b)
        started = time.perf_counter()
        with no_grad():
            for bucket, work in zip(self.buckets, self._work):
                assert work is not None
                flat = work.wait()
                flags = flat[flat.shape[0] - len(bucket):].tolist()
                offset = 0
                for p, flag in zip(bucket, flags):
                    n = p.numel()
                    p.grad = flat[offset:offset + n].reshape(p.shape) if flag else None
                    offset += n
        self._ready = [0] * len(self.buckets)
        self._work = [None] * len(self.buckets)
        self._update += 1
        self.comm_seconds += time.perf_counter() - started

    def remove(self) -> None:
        """Unregister the hooks."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
