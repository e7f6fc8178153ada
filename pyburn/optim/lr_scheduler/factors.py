"""Schedules that scale the initial learning rate by a factor of the epoch: constant and linear
warm-up, step decay, exponential decay and the Transformer's (Noam) warm-up schedule.

Each has PyTorch's chainable step rule (`get_lr`, which scales the current lr) and its closed
form (`closed_form`, from the initial lr)."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter

from ...errors import ArgumentError
from ..optimizer import Optimizer
from .base import LRScheduler


def _current(scheduler: LRScheduler) -> list[float]:
    return [group["lr"] for group in scheduler.optimizer.param_groups]


def _scaled(scheduler: LRScheduler, factor: float) -> list[float]:
    return [group["lr"] * factor for group in scheduler.optimizer.param_groups]


def _positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or value < 1:
        raise ArgumentError(f"{name} must be a positive integer, got {value!r}")


class ConstantLR(LRScheduler):
    """lr × `factor` for the first `total_iters` epochs, then the initial lr.

    >>> import pyburn
    >>> from pyburn.optim import SGD
    >>> opt = SGD([pyburn.zeros(1, device="flex")], lr=1.0)
    >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [0.5, 0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0.0 <= factor <= 1.0:
            raise ArgumentError(f"ConstantLR's factor must be in [0, 1], got {factor!r}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Scale by factor at epoch 0, undo it at `total_iters`."""
        if self.last_epoch == 0:
            return _scaled(self, self.factor)
        if self.last_epoch != self.total_iters:
            return _current(self)
        return _scaled(self, 1.0 / self.factor)

    def closed_form(self) -> list[float]:
        """``base_lr * factor`` before `total_iters`, ``base_lr`` from then on."""
        factor = 1.0 if self.last_epoch >= self.total_iters else self.factor
        return [base * factor for base in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor on the initial lr goes linearly from `start_factor` to `end_factor` over
    `total_iters` epochs, then stays: a linear warm-up (start below 1) or decay."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1):
        if not 0.0 < start_factor <= 1.0:
            raise ArgumentError(f"LinearLR's start_factor must be in (0, 1], got "
                                f"{start_factor!r}")
        if not 0.0 <= end_factor <= 1.0:
            raise ArgumentError(f"LinearLR's end_factor must be in [0, 1], got {end_factor!r}")
        _positive_int("total_iters", total_iters)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Scale by start_factor at epoch 0, then by the ratio of consecutive factors."""
        if self.last_epoch == 0:
            return _scaled(self, self.start_factor)
        if self._initial or self.last_epoch > self.total_iters:
            return _current(self)
        delta = self.end_factor - self.start_factor
        previous = self.total_iters * self.start_factor + (self.last_epoch - 1) * delta
        return _scaled(self, 1.0 + delta / previous)

    def closed_form(self) -> list[float]:
        """``base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters)``."""
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class StepLR(LRScheduler):
    """lr × `gamma` every `step_size` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        _positive_int("step_size", step_size)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Scale by gamma on each nonzero multiple of step_size."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return _current(self)
        return _scaled(self, self.gamma)

    def closed_form(self) -> list[float]:
        """``base_lr * gamma ** (epoch // step_size)``."""
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr × `gamma` at each epoch in `milestones` (a milestone listed twice scales twice)."""

    def __init__(self, optimizer: Optimizer, milestones: list[int], gamma: float = 0.1,
                 last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Scale by gamma ** (times this epoch is listed)."""
        if self.last_epoch not in self.milestones:
            return _current(self)
        return _scaled(self, self.gamma ** self.milestones[self.last_epoch])

    def closed_form(self) -> list[float]:
        """``base_lr * gamma ** (milestones passed)``."""
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr × `gamma` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """Scale by gamma (not at creation)."""
        if self._initial:
            return _current(self)
        return _scaled(self, self.gamma)

    def closed_form(self) -> list[float]:
        """``base_lr * gamma ** epoch``."""
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class NoamLR(LRScheduler):
    """The Transformer's schedule (Vaswani et al., 2017, section 5.3): a linear warm-up over
    `warmup_steps` steps, then decay as the inverse square root of the step.

    At step s = ``last_epoch + 1`` (the optimizer's first update is step 1) the learning rate
    is ``initial_lr * factor * d_model ** -0.5 * min(s ** -0.5, s * warmup_steps ** -1.5)``,
    peaking at ``s = warmup_steps``. Give the optimizer ``lr=1.0`` for the paper's values
    (it used factor 1, d_model 512, 4000 warm-up steps and Adam with betas (0.9, 0.98),
    eps 1e-9); like every schedule here, it scales each group's initial lr, so groups keep
    their ratios.
    """

    def __init__(self, optimizer: Optimizer, d_model: int, warmup_steps: int = 4000,
                 factor: float = 1.0, last_epoch: int = -1):
        _positive_int("d_model", d_model)
        _positive_int("warmup_steps", warmup_steps)
        if not factor > 0:
            raise ArgumentError(f"NoamLR's factor must be positive, got {factor!r}")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.factor = factor
        super().__init__(optimizer, last_epoch)

    def _rate(self, epoch: int) -> float:
        step = epoch + 1
        return (self.factor * self.d_model**-0.5
                * min(step**-0.5, step * self.warmup_steps**-1.5))

    def get_lr(self) -> list[float]:
        """Scale by the rate at epoch 0, then by the ratio of consecutive rates."""
        if self.last_epoch == 0:
            return _scaled(self, self._rate(0))
        if self._initial:
            return _current(self)
        return _scaled(self, self._rate(self.last_epoch) / self._rate(self.last_epoch - 1))

    def closed_form(self) -> list[float]:
        """``base_lr`` times the rate at this epoch."""
        return [base * self._rate(self.last_epoch) for base in self.base_lrs]
