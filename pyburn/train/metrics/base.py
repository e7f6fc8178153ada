"""`Metric`, the protocol every training metric follows, and `StepOutput`, what it sees.

A metric accumulates over many batches and is read once in a while: ``update`` runs after
every batch and should only do tensor work (sums stay on the device, so a GPU is never
waited for), ``compute`` reads the accumulated state back and runs only when the learner
logs. ``state_dict`` / ``load_state_dict`` carry the accumulators through a checkpoint, so a
run resumed mid-epoch reports the same epoch values as one that was never stopped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..._tensor import Tensor

#: a metric's value: a number, a nested list (a confusion matrix), or None (not available)
Value = float | int | list | None


@dataclass(frozen=True)
class StepOutput:
    """What one batch produced, as every metric's ``update`` receives it."""

    #: the model's output, detached from the graph
    outputs: Any
    #: the batch's targets
    targets: Any
    #: the batch's loss: a detached 0-d tensor (the mean over the batch's items)
    loss: Tensor
    #: how many items the batch held (the first dimension of its targets)
    items: int
    #: "train" or "valid"
    split: str
    #: the optimizer, for metrics that report its settings (None during evaluation)
    optimizer: Any = None


class Metric:
    """Base class of the metrics: subclasses set `name`, list the attributes that hold
    their accumulated state in `state_names`, and implement `reset`, `update` and
    `compute`. The state attributes may hold tensors, numbers or None; the base class saves
    and restores them for checkpoints."""

    #: the key of the metric's value in logs and results ("accuracy" → "valid/accuracy")
    name: str = "metric"
    #: True when larger values are better, False when smaller are, None when it is not a
    #: measure of quality (speed, memory): decides the default mode of best/early stopping
    higher_is_better: bool | None = None
    #: the splits where the metric is measured
    splits: tuple[str, ...] = ("train", "valid")
    #: the attributes that `state_dict` saves
    state_names: tuple[str, ...] = ()

    def reset(self) -> None:
        """Forget everything accumulated (start of an epoch or of an evaluation)."""
        raise NotImplementedError(f"{type(self).__name__} does not define reset()")

    def update(self, step: StepOutput) -> None:
        """Add one batch: tensor work only, no reading back."""
        raise NotImplementedError(f"{type(self).__name__} does not define update()")

    def compute(self) -> Value:
        """The value over everything since `reset` (this reads tensors back)."""
        raise NotImplementedError(f"{type(self).__name__} does not define compute()")

    def format(self, value: Value) -> str:
        """`value` as the terminal shows it."""
        return format_number(value)

    def state_dict(self) -> dict[str, Any]:
        """The accumulated state, for a checkpoint."""
        return {name: getattr(self, name) for name in self.state_names}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back a state taken with `state_dict`."""
        for name in self.state_names:
            setattr(self, name, state[name])

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def format_number(value: Value) -> str:
    """A compact form of a metric value: four significant digits, thousands for large ones."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else "…"
    if isinstance(value, int) or (math.isfinite(value) and abs(value) >= 1e4):
        return f"{value:,.0f}"
    return f"{value:.4g}"


def add(total: Tensor | None, amount: Tensor) -> Tensor:
    """``total + amount``, where a None total is the start of the sum."""
    return amount if total is None else total + amount
