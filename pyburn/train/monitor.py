"""Watching one logged metric across epochs: `Monitor` keeps its best value (for the best
checkpoint), `EarlyStopping` stops training when it has not improved for a while."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..errors import ArgumentError
from .metrics.base import Metric

SPLITS = ("train", "valid")


class Monitor:
    """The best value so far of the metric `key` ("valid/accuracy": split, then name).

    `mode` "max" means larger is better, "min" smaller; None takes it from the metric
    (``higher_is_better``). A value counts as an improvement when it beats the best by more
    than `min_delta`; NaN never does.
    """

    def __init__(self, key: str, mode: str | None = None, min_delta: float = 0.0):
        split, _, name = key.partition("/") if isinstance(key, str) else ("", "", "")
        if split not in SPLITS or not name:
            raise ArgumentError(f"a monitored metric is named 'split/name' with split train or "
                                f"valid, e.g. 'valid/loss'; got {key!r}")
        if mode not in (None, "min", "max"):
            raise ArgumentError(f"mode is 'min', 'max' or None, got {mode!r}")
        if not isinstance(min_delta, (int, float)) or not min_delta >= 0:
            raise ArgumentError(f"min_delta must be a number >= 0, got {min_delta!r}")
        self.key, self.split, self.name = key, split, name
        self.mode = mode
        self.min_delta = float(min_delta)
        #: the best value so far and the epoch (counted from 1) that gave it
        self.best: float | None = None
        self.best_epoch: int | None = None

    def resolve(self, metrics: Sequence[Metric]) -> None:
        """Check that the metric is measured, and choose the mode from it if not given."""
        found = [m for m in metrics if m.name == self.name and self.split in m.splits]
        if not found:
            names = sorted({f"{s}/{m.name}" for m in metrics for s in m.splits})
            raise ArgumentError(f"no metric gives {self.key!r}; measured: {', '.join(names)}")
        if self.mode is None:
            better = found[0].higher_is_better
            if better is None:
                raise ArgumentError(f"{self.key!r} is not a measure of quality: pass "
                                    "mode='min' or mode='max'")
            self.mode = "max" if better else "min"

    def value_in(self, metrics: dict[str, Any]) -> float | None:
        """This metric's value among an epoch's results (None when it has none)."""
        value = metrics.get(self.key)
        return float(value) if isinstance(value, (int, float)) else None

    def improved(self, value: float | None, epoch: int) -> bool:
        """Whether `value` (from epoch `epoch`) beats the best; if so it becomes the best."""
        if value is None or math.isnan(value):
            return False
        if self.best is not None:
            gain = value - self.best if self.mode == "max" else self.best - value
            if gain <= self.min_delta:
                return False
        self.best, self.best_epoch = value, epoch
        return True

    def state_dict(self) -> dict[str, Any]:
        """The best value and its epoch, for a checkpoint."""
        return {"best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back a state taken with `state_dict`."""
        self.best, self.best_epoch = state["best"], state["best_epoch"]


class EarlyStopping:
    """Stop training once the metric `metric` has gone `patience` epochs without improving
    by more than `min_delta` (`mode` as in `Monitor`).

    >>> stop = EarlyStopping("valid/loss", patience=2, mode="min")
    >>> [stop.update({"valid/loss": v}, epoch) for epoch, v in enumerate([3, 2, 2.5, 2.1], 1)]
    [False, False, False, True]
    """

    def __init__(self, metric: str = "valid/loss", patience: int = 5, min_delta: float = 0.0,
                 mode: str | None = None):
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ArgumentError(f"patience must be a positive int, got {patience!r}")
        self.monitor = Monitor(metric, mode, min_delta)
        self.patience = patience
        #: epochs since the last improvement
        self.bad_epochs = 0

    def update(self, metrics: dict[str, Any], epoch: int) -> bool:
        """Take an epoch's results; True when training should stop."""
        if self.monitor.improved(self.monitor.value_in(metrics), epoch):
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience

    def state_dict(self) -> dict[str, Any]:
        """The count and the best value, for a checkpoint."""
        return {"bad_epochs": self.bad_epochs, **self.monitor.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back a state taken with `state_dict`."""
        self.bad_epochs = int(state["bad_epochs"])
        self.monitor.load_state_dict(state)

    def __repr__(self) -> str:
        m = self.monitor
        return (f"EarlyStopping({m.key!r}, patience={self.patience}, "
                f"min_delta={m.min_delta}, mode={m.mode!r})")
