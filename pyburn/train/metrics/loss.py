"""The loss metric: the mean of the loss over every item seen since the last reset."""

from __future__ import annotations

from ...dtypes import float64
from .base import Metric, StepOutput, Value, add


class Loss(Metric):
    """Mean loss per item. Each batch's loss (a mean over its items) is weighted by the
    batch's size, so a smaller last batch counts for what it holds. The sum stays on the
    device, in float64 where the device has it."""

    name = "loss"
    higher_is_better = False
    state_names = ("total", "count")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start a new mean."""
        self.total = None
        self.count = 0

    def update(self, step: StepOutput) -> None:
        """Add the batch's loss, times its number of items."""
        loss = step.loss
        if float64 in loss.device.backend.dtypes:
            loss = loss.cast(float64)
        self.total = add(self.total, loss * step.items)
        self.count += step.items

    def compute(self) -> Value:
        """The mean loss per item (None before the first batch)."""
        if self.total is None or not self.count:
            return None
        return self.total.item() / self.count
