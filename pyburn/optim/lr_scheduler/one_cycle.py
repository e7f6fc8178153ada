"""The 1cycle policy (Smith & Topin, "Super-Convergence", 2018), fastai's two-phase default."""

from __future__ import annotations

import math
from typing import Any

from ...errors import ArgumentError
from ..optimizer import Optimizer
from .base import LRScheduler, per_group


def _cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1.0)


def _linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


_ANNEAL = {"cos": _cos, "linear": _linear}


class OneCycleLR(LRScheduler):
    """One cycle per training run, stepped after every batch: the learning rate climbs from
    ``max_lr / div_factor`` to `max_lr` over the first `pct_start` of `total_steps`, then
    anneals down to ``max_lr / div_factor / final_div_factor``; the momentum (``momentum``,
    or beta1 of ``betas``) moves the other way, between `max_momentum` and `base_momentum`.

    ``three_phase=True`` follows the paper instead: up, back down to the initial lr
    symmetrically, then a final annihilation phase. `anneal_strategy` is "cos" or "linear".
    Give `total_steps`, or `epochs` and `steps_per_epoch`. `max_lr`, `base_momentum` and
    `max_momentum` may be lists with one value per parameter group. Not chainable: it sets
    absolute values (stored in each group as "initial_lr", "max_lr", "min_lr", ...).
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"a scheduler drives an Optimizer, got {type(optimizer).__name__}")
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not 0.0 <= pct_start <= 1.0:
            raise ArgumentError(f"pct_start must be in [0, 1], got {pct_start!r}")
        if anneal_strategy not in _ANNEAL:
            raise ArgumentError(f"anneal_strategy must be 'cos' or 'linear', got "
                                f"{anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        rise_end = float(pct_start * self.total_steps) - 1
        # Each phase: (last step, group keys of its start and end lr, of its start and end
        # momentum); a phase runs from the previous phase's last step to its own.
        if three_phase:
            self.phases = [
                (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (2 * rise_end, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self.phases = [
                (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, peak in zip(groups, per_group("max_lr", optimizer, max_lr)):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        self.use_beta1 = "betas" in optimizer.defaults
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and not self.use_beta1:
                raise ArgumentError(f"cycle_momentum=True needs an optimizer with momentum or "
                                    f"betas; {type(optimizer).__name__} has neither (pass "
                                    "cycle_momentum=False)")
            if last_epoch == -1:
                highs = per_group("max_momentum", optimizer, max_momentum)
                lows = per_group("base_momentum", optimizer, base_momentum)
                for group, high, low in zip(groups, highs, lows):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        """The learning rates at step `last_epoch` (and, as a side effect, the momentum)."""
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentError(f"Tried to step {step} times. The specified number of total "
                                f"steps is {self.total_steps}")
        start, phase = 0.0, self.phases[-1]  # past every other phase's end: the last one
        for candidate in self.phases[:-1]:
            if step <= candidate[0]:
                phase = candidate
                break
            start = candidate[0]
        end, lr_from, lr_to, mom_from, mom_to = phase
        pct = (step - start) / (end - start)
        anneal = _ANNEAL[self.anneal_strategy]
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(anneal(group[lr_from], group[lr_to], pct))
            if self.cycle_momentum:
                self._set_momentum(group, anneal(group[mom_from], group[mom_to], pct))
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None,
                 steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ArgumentError(f"total_steps must be a positive integer, got {total_steps!r}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ArgumentError("OneCycleLR needs total_steps, or epochs and steps_per_epoch")
    for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
        if not isinstance(value, int) or value <= 0:
            raise ArgumentError(f"{name} must be a positive integer, got {value!r}")
    return epochs * steps_per_epoch
