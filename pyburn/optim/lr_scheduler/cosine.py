"""Cosine annealing (Loshchilov & Hutter, "SGDR", 2017), without and with warm restarts."""

from __future__ import annotations

import math

from ...errors import ArgumentError
from ..optimizer import Optimizer
from .base import LRScheduler


class CosineAnnealingLR(LRScheduler):
    """The learning rate follows half a cosine from the initial lr down to `eta_min` over
    `T_max` epochs: ``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.
    Past `T_max` it keeps following the cosine (back up), as PyTorch's does.

    Chainable: each step applies the ratio of consecutive cosine terms to the current lr
    (PyTorch's recursion), so other schedules may act on the same optimizer.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not T_max > 0:
            raise ArgumentError(f"T_max must be positive, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The recursive cosine step (at the bottom of a period, where the ratio is 0/0, the
        step that climbs out of it)."""
        groups = self.optimizer.param_groups
        if self._initial:
            return [group["lr"] for group in groups]
        epoch, period, low = self.last_epoch, self.T_max, self.eta_min
        if (epoch - 1 - period) % (2 * period) == 0:
            rise = (1.0 - math.cos(math.pi / period)) / 2.0
            return [group["lr"] + (base - low) * rise
                    for base, group in zip(self.base_lrs, groups)]
        ratio = ((1.0 + math.cos(math.pi * epoch / period))
                 / (1.0 + math.cos(math.pi * (epoch - 1) / period)))
        return [ratio * (group["lr"] - low) + low for group in groups]

    def closed_form(self) -> list[float]:
        """``eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``."""
        cosine = (1.0 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2.0
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial lr to `eta_min` over `T_0` epochs, then restart;
    each period is `T_mult` times longer than the one before. Within a period of length T_i,
    at T_cur epochs since the restart: ``eta_min + (base_lr - eta_min) * (1 + cos(pi *
    T_cur / T_i)) / 2``.

    ``step(epoch)`` may take a fractional epoch, to anneal within an epoch:
    ``sched.step(epoch + i / iters_per_epoch)`` after each batch. Not chainable.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,
                 eta_min: float = 0.0, last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ArgumentError(f"T_0 must be a positive integer, got {T_0!r}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ArgumentError(f"T_mult must be an integer >= 1, got {T_mult!r}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur: float = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The cosine at T_cur within the current period T_i."""
        cosine = (1.0 + math.cos(math.pi * self.T_cur / self.T_i)) / 2.0
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]

    def closed_form(self) -> list[float]:
        """The learning rates at epoch `last_epoch`, locating its period from scratch."""
        self._seek(self.last_epoch)
        return self.get_lr()

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or jump to `epoch` (may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        else:
            self._seek(epoch)
        self.last_epoch = math.floor(epoch)
        self._apply(self.get_lr())

    def _seek(self, epoch: float) -> None:
        """Set T_i and T_cur for `epoch`: periods T_0, T_0 T_mult, T_0 T_mult², ... start at
        T_0 (T_mult^n - 1) / (T_mult - 1)."""
        if epoch < 0:
            raise ArgumentError(f"epoch must be non-negative, got {epoch!r}")
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_i, self.T_cur = self.T_0, epoch % self.T_0
        else:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n
