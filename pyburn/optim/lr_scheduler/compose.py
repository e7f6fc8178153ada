"""Composing schedules: one after another (`SequentialLR`) or all at once (`ChainedScheduler`)."""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ...errors import ArgumentError
from ..optimizer import Optimizer
from .base import LRScheduler


class _Composite(LRScheduler):
    """A schedule made of other schedules on the same optimizer; its state dict nests
    theirs under "_schedulers"."""

    _schedulers: list[LRScheduler]

    def _adopt(self, kind: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
        if not schedulers:
            raise ArgumentError(f"{kind} needs at least one scheduler")
        for i, scheduler in enumerate(schedulers):
            if not isinstance(scheduler, LRScheduler):
                raise ArgumentError(f"{kind}: schedulers[{i}] is a {type(scheduler).__name__}, "
                                    "not an LRScheduler")
            if scheduler.optimizer is not optimizer:
                raise ArgumentError(f"{kind}: schedulers[{i}] ({type(scheduler).__name__}) "
                                    "drives another optimizer; all must drive the same one")
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._initial = False

    def state_dict(self) -> dict[str, Any]:
        """This schedule's counters, and each member's state dict under "_schedulers"."""
        state = {k: copy.deepcopy(v) for k, v in vars(self).items()
                 if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state taken with `state_dict`, members included."""
        members = state_dict["_schedulers"]
        if len(members) != len(self._schedulers):
            raise ArgumentError(f"the state dict holds {len(members)} schedulers, this "
                                f"{type(self).__name__} {len(self._schedulers)}")
        self.__dict__.update(copy.deepcopy({k: v for k, v in state_dict.items()
                                            if k != "_schedulers"}))
        for scheduler, state in zip(self._schedulers, members):
            scheduler.load_state_dict(state)


def _rewind(scheduler: LRScheduler) -> None:
    """Undo the step a scheduler took when it was created (each leaf of a composite)."""
    if isinstance(scheduler, _Composite):
        for member in scheduler._schedulers:
            _rewind(member)
    else:
        scheduler.last_epoch -= 1


class SequentialLR(_Composite):
    """Run `schedulers` one after another: the first until epoch ``milestones[0]``, the
    second from there (restarted at its epoch 0), and so on. A typical warm-up then decay:

    >>> import pyburn
    >>> from pyburn.optim import SGD
    >>> from pyburn.optim.lr_scheduler import CosineAnnealingLR, LinearLR
    >>> opt = SGD([pyburn.zeros(1, device="flex")], lr=1.0)
    >>> warmup = LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> decay = CosineAnnealingLR(opt, T_max=2)
    >>> sched = SequentialLR(opt, [warmup, decay], milestones=[3])
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(round(sched.get_last_lr()[0], 3)); sched.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 0.5, 0.0]
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1):
        self._adopt("SequentialLR", optimizer, schedulers)
        milestones = list(milestones)
        if len(milestones) != len(self._schedulers) - 1:
            raise ArgumentError(f"SequentialLR needs one milestone fewer than schedulers: got "
                                f"{len(self._schedulers)} schedulers and {len(milestones)} "
                                "milestones")
        if milestones != sorted(milestones):
            raise ArgumentError(f"SequentialLR's milestones must be increasing, got {milestones}")
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        for group in optimizer.param_groups:  # the members' creation changed them
            group["lr"] = group["initial_lr"]
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        for scheduler in self._schedulers:
            _rewind(scheduler)
        first = self._schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        """Advance one epoch: step the scheduler whose turn it is, restarting it at its
        milestone."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler.restart()
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Step every one of `schedulers` on each ``step()``: their effects multiply (each
    chainable schedule scales the lr the previous one left), e.g. a warm-up and a decay at
    the same time."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None):
        if optimizer is None and schedulers:
            optimizer = schedulers[0].optimizer
        self._adopt("ChainedScheduler", optimizer, schedulers)  # type: ignore[arg-type]
        self.base_lrs = [group["initial_lr"] for group in self.optimizer.param_groups]
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def step(self) -> None:
        """Step each member in turn."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
