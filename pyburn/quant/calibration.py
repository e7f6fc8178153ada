"""Calibration for static quantization: `calibrate` runs batches through a model with an
observer on the input of each layer to be quantized, and returns the ranges it saw, which
``quantize(model, scheme, "static", calibration)`` turns into fixed input scales and zero
points.

Two observers: "minmax", the smallest and largest value over all batches (onnxruntime's
MinMax calibrator, PyTorch's MinMaxObserver), and "moving_average", whose range moves toward
each batch's by `averaging_constant` (PyTorch's MovingAverageMinMaxObserver: the first batch
sets it, then ``min += c * (batch_min - min)``). Both keep their numbers on the device and
read them once at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError
from ..nn.module import Module
from ..tape import no_grad
from .selection import Filter, select

__all__ = ["OBSERVERS", "Calibration", "MinMaxObserver", "MovingAverageObserver", "calibrate"]


class MinMaxObserver:
    """The smallest and largest value of every tensor it was shown."""

    def __init__(self) -> None:
        self.low: Tensor | None = None
        self.high: Tensor | None = None

    def update(self, x: Tensor) -> None:
        """Take in the values of `x`."""
        low, high = x.detach().float().amin(), x.detach().float().amax()
        if self.low is None or self.high is None:
            self.low, self.high = low, high
        else:
            self.low, self.high = self._merge(self.low, low), self._merge(self.high, high, True)

    def _merge(self, old: Tensor, new: Tensor, upper: bool = False) -> Tensor:
        return old.maximum(new) if upper else old.minimum(new)

    def range(self) -> tuple[float, float] | None:
        """(min, max) of what it saw, or None when it saw nothing."""
        if self.low is None or self.high is None:
            return None
        return float(self.low.item()), float(self.high.item())


class MovingAverageObserver(MinMaxObserver):
    """A range that follows each tensor's by `averaging_constant` (see the module
    docstring)."""

    def __init__(self, averaging_constant: float = 0.01):
        super().__init__()
        if not 0.0 < averaging_constant <= 1.0:
            raise ArgumentError(f"averaging_constant must be in (0, 1], got "
                                f"{averaging_constant!r}")
        self.averaging_constant = averaging_constant

    def _merge(self, old: Tensor, new: Tensor, upper: bool = False) -> Tensor:
        return old + self.averaging_constant * (new - old)


#: the observers by name
OBSERVERS = {"minmax": MinMaxObserver, "moving_average": MovingAverageObserver}


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` saw: the input range (min, max) of each layer, by dotted name, and
    the observer that measured them."""

    ranges: dict[str, tuple[float, float]]
    observer: str = "minmax"

    def range_of(self, name: str) -> tuple[float, float]:
        """The input range of layer `name`."""
        found = self.ranges.get(name)
        if found is None:
            raise ArgumentError(f"the calibration has no input range for layer {name!r}: no "
                                f"calibration batch reached it (calibrated: "
                                f"{', '.join(map(repr, self.ranges)) or 'none'})")
        return found


def calibrate(module: Module, loader: Iterable[Any], num_batches: int | None = None, *,
              observer: str = "minmax", averaging_constant: float = 0.01,
              targets: Filter = None, skip: Filter = ()) -> Calibration:
    """Run up to `num_batches` batches of `loader` (all when None) through `module` in eval
    mode without gradients, observing the input of each layer that ``quantize`` would
    quantize with the same `targets` and `skip`; returns the ranges.

    A batch is the model's input (a tensor), or a tuple or list whose first element is (the
    ``(inputs, targets)`` pairs a `pyburn.data.DataLoader` gives). `observer` is "minmax" or
    "moving_average" (with `averaging_constant`). The model's training flags are restored
    afterwards.

    >>> import pyburn
    >>> from pyburn import nn, quant
    >>> model = nn.Sequential(nn.Linear(2, 2, device="flex"))
    >>> batches = [pyburn.tensor([[-1.0, 3.0]], device="flex")]
    >>> quant.calibrate(model, batches).ranges
    {'0': (-1.0, 3.0)}
    """
    if observer not in OBSERVERS:
        raise ArgumentError(f"calibrate: observer must be one of {', '.join(OBSERVERS)}, got "
                            f"{observer!r}")
    if num_batches is not None and (isinstance(num_batches, bool) or
                                    not isinstance(num_batches, int) or num_batches <= 0):
        raise ArgumentError(f"calibrate: num_batches must be a positive int or None, got "
                            f"{num_batches!r}")
    layers = select(module, targets, skip)
    observers = {name: (MovingAverageObserver(averaging_constant)
                        if observer == "moving_average" else MinMaxObserver())
                 for name, _ in layers}
    flags = [(m, m.training) for m in module.modules()]
    try:
        module.eval()
        for name, layer in layers:
            _observe(layer, observers[name])
        seen = 0
        with no_grad():
            for batch in loader:
                if num_batches is not None and seen >= num_batches:
                    break
                module(_input_of(batch))
                seen += 1
    finally:
        for _, layer in layers:
            layer.__dict__.pop("forward", None)
        for m, training in flags:
            object.__setattr__(m, "training", training)
    if not seen:
        raise ArgumentError("calibrate: the loader gave no batch")
    ranges = {name: r for name, obs in observers.items() if (r := obs.range()) is not None}
    return Calibration(ranges, observer)


def _observe(layer: Module, observer: MinMaxObserver) -> None:
    """Make `layer` show its input to `observer` before its forward runs (an instance
    attribute over the class's forward, removed by `calibrate`)."""
    forward = type(layer).forward

    def observed(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        observer.update(input)
        return forward(layer, input, *args, **kwargs)

    object.__setattr__(layer, "forward", observed)


def _input_of(batch: Any) -> Any:
    if isinstance(batch, (tuple, list)) and batch:
        batch = batch[0]
    if not isinstance(batch, Tensor):
        raise ArgumentError(f"calibrate: a batch is a tensor, or a tuple or list whose first "
                            f"element is the model's input tensor; got {type(batch).__name__}")
    return batch
