"""`LRScheduler`: the base of the learning-rate schedules (PyTorch's semantics, step for step).

A scheduler owns a counter, `last_epoch`, and rewrites ``group["lr"]`` of every parameter group
of its optimizer on each ``step()``. Creating one takes the first step at once (epoch 0), so
the optimizer's first update already uses the schedule's first value; call ``scheduler.step()``
after ``optimizer.step()``. The learning rate each group started from is kept in the group as
"initial_lr" (and in `base_lrs`).

Most schedules are *chainable*: their step rule multiplies (or shifts) the current
``group["lr"]``, not the initial one, so several of them can act on one optimizer
(`ChainedScheduler`). They also know their closed form (the value at any epoch from
`base_lrs`), which `SequentialLR` uses to restart one at epoch 0.
"""

from __future__ import annotations

import copy
from typing import Any

from ...errors import ArgumentError
from ..optimizer import Optimizer


class LRScheduler:
    """Base class of the learning-rate schedulers. Subclasses implement `get_lr` (the
    chainable step rule) and, where there is one, `closed_form`.

    `last_epoch` is the index of the last epoch (or batch) seen: -1 starts the schedule;
    another value resumes it, which needs "initial_lr" in every group (prefer
    `load_state_dict` to resume).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"a scheduler drives an Optimizer, got {type(optimizer).__name__}"
                                " (for a GradientAccumulator, pass its .optimizer)")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise ArgumentError(f"resuming a schedule at last_epoch={last_epoch} needs "
                                        f"'initial_lr' in param_groups[{i}]: load the "
                                        "optimizer's state dict first, or use last_epoch=-1")
        #: the learning rate of each group when the schedule started
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._last_lr: list[float] = []
        self._initial = False
        self._initial_step()

    def _initial_step(self) -> None:
        """The step taken at creation. While it runs `_initial` is True: the schedules that
        keep the current lr then (as PyTorch's do) read it."""
        self._initial = True
        try:
            self.step()
        finally:
            self._initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for epoch `last_epoch`, from the current ``group["lr"]`` values
        (the chainable rule; `step` has already advanced `last_epoch`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_lr()")

    def closed_form(self) -> list[float] | None:
        """The learning rates at epoch `last_epoch` computed from `base_lrs` alone, or None
        for a schedule that has no closed form."""
        return None

    def step(self) -> None:
        """Advance one epoch (or batch) and set the optimizer's learning rates."""
        self.last_epoch += 1
        self._apply(self.get_lr())

    def restart(self) -> None:
        """Jump back to epoch 0 (what `SequentialLR` does at a milestone): the closed form at
        epoch 0 where there is one, else the step rule."""
        self.last_epoch = 0
        values = self.closed_form()
        self._apply(self.get_lr() if values is None else values)

    def _apply(self, values: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates the last step set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Everything the scheduler holds except the optimizer (plain data, a copy)."""
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state taken with `state_dict`."""
        self.__dict__.update(copy.deepcopy(state_dict))


def per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """`value` for each parameter group: a list/tuple with one entry per group, or one value
    for all."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ArgumentError(f"{name} has {len(value)} values for {groups} parameter groups")
        return list(value)
    return [value] * groups
