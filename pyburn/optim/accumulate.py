"""Gradient accumulation: one optimizer update per several backward passes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ArgumentError
from ..tape import enable_grad, no_grad
from .optimizer import Optimizer


class GradientAccumulator:
    """Wrap `optimizer` so that its update runs once every `steps` calls of ``step()``, on
    the gradients that the backward passes in between summed into ``.grad``: training on
    micro-batches behaves like training on batches `steps` times larger.

    ``acc = GradientAccumulator(optimizer, steps=4)``; then, per micro-batch: ``loss =
    ...; loss.backward(); acc.step(); acc.zero_grad()``. ``zero_grad()`` only clears the
    gradients when no micro-batch is pending, that is right after an update.

    Mean, not sum: with ``average=True`` (the default) the gradients are divided by the
    number of backward passes before the update, so the update sees their mean. That is what
    the usual manual recipe, ``(loss / steps).backward()``, gives, and what one step on the
    whole batch gives when the loss is a mean over samples (micro-batches of equal size):
    the learning rate means the same with and without accumulation. Do not divide the loss
    yourself as well; if your code already does, pass ``average=False`` (the sum is used).

    >>> import pyburn
    >>> from pyburn.optim import SGD
    >>> dev = pyburn.device("flex").autodiff()
    >>> w = pyburn.tensor([0.0], device=dev, requires_grad=True)
    >>> acc = GradientAccumulator(SGD([w], lr=1.0), steps=2)
    >>> for target in (2.0, 4.0):
    ...     ((w - target) ** 2 / 2).sum().backward()   # gradients -2, then -4
    ...     acc.step()
    ...     acc.zero_grad()
    >>> w.tolist()   # one step on the mean gradient, -3
    [3.0]
    """

    def __init__(self, optimizer: Optimizer, steps: int, average: bool = True):
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"GradientAccumulator wraps an Optimizer, got "
                                f"{type(optimizer).__name__}")
        if not isinstance(steps, int) or steps < 1:
            raise ArgumentError(f"steps must be a positive integer, got {steps!r}")
        self.optimizer = optimizer
        self.steps = steps
        self.average = average
        #: backward passes counted since the last update
        self.accumulated = 0
        #: whether the last ``step()`` call updated the parameters (step an LR scheduler then)
        self.updated = False

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The wrapped optimizer's parameter groups."""
        return self.optimizer.param_groups

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Count one backward pass; on every `steps`-th call, update the parameters. A
        `closure` runs first (with gradients on) and its loss is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self.accumulated += 1
        self.updated = self.accumulated == self.steps
        if self.updated:
            self._apply()
        return loss

    def flush(self) -> bool:
        """Update now with what has been accumulated (the mean over the backward passes so
        far), e.g. at the end of an epoch whose length is not a multiple of `steps`.
        Returns whether there was anything to apply."""
        if not self.accumulated:
            return False
        self._apply()
        self.updated = True
        return True

    def _apply(self) -> None:
        if self.average and self.accumulated > 1:
            scale = 1.0 / self.accumulated
            with no_grad():
                for group in self.optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.mul_(scale)
        self.optimizer.step()
        self.accumulated = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients if no backward pass is pending (right after an update);
        otherwise keep accumulating."""
        if not self.accumulated:
            self.optimizer.zero_grad(set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """The wrapped optimizer's state and the accumulation count. Gradients are not
        included: take checkpoints right after an update (when `updated` is True)."""
        return {"optimizer": self.optimizer.state_dict(), "accumulated": self.accumulated}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state taken with `state_dict`."""
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.accumulated = int(state_dict["accumulated"])
