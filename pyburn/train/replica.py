"""`Replica`: what a `Learner` asks of the process group it trains in.

A Learner always trains through a replica. This base class is the single process: it
synchronizes nothing, writes the run's files and computes every value itself. A
distributed strategy (`pyburn.distributed.Ray`) gives each of its workers' Learners a
replica that all-reduces the gradients, lets only rank 0 write, and shares rank 0's values
with the other ranks, so that every rank takes the same decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

T = TypeVar("T")


class Replica:
    """One training process of one: the Learner's default."""

    #: whether this process writes the run's files (logs, checkpoints) and renders
    is_main = True

    def no_sync(self) -> AbstractContextManager[Any]:
        """A context in which backward passes keep their gradients local (gradient
        accumulation); the next synchronized pass or `synchronize` combines them."""
        return nullcontext()

    def synchronize(self) -> None:
        """Make every parameter's ``.grad`` the gradient of the whole group, before an
        optimizer update."""

    def share(self, compute: Callable[[], T]) -> T:
        """``compute()`` run by the main process, its result handed to every process."""
        return compute()

    def can_save(self, pending: int) -> bool:
        """Whether this process writes a checkpoint now, `pending` backward passes after the
        last update (a distributed run's checkpoints are taken between updates only: the
        gradients accumulated in between differ from rank to rank)."""
        return True

    def config(self) -> dict[str, Any] | None:
        """What ``run.json`` records about the process group (None for one process)."""
        return None
