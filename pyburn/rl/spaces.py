"""Spaces: what an environment's observations and actions are (gymnasium's ``Discrete`` and
``Box``), able to check a value and to sample one from a `random.Random`, in pure Python.

>>> import random
>>> Discrete(2).contains(1), Box([-1.0, -2.0], [1.0, 2.0]).shape
(True, (2,))
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from ..errors import ArgumentError


class Space(ABC):
    """A set of values: `contains` checks one, `sample` draws one."""

    @abstractmethod
    def contains(self, value: Any) -> bool:
        """Whether `value` is in the space."""

    @abstractmethod
    def sample(self, rng: random.Random) -> Any:
        """A value of the space, drawn from `rng`."""


class Discrete(Space):
    """The integers 0 .. n - 1."""

    def __init__(self, n: int):
        if not isinstance(n, int) or n < 1:
            raise ArgumentError(f"Discrete takes a positive count, got {n!r}")
        self.n = n

    def __repr__(self) -> str:
        return f"Discrete({self.n})"

    def contains(self, value: Any) -> bool:
        """Whether `value` is one of the integers (an integer-valued float is not)."""
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < self.n

    def sample(self, rng: random.Random) -> int:
        return rng.randrange(self.n)


class Box(Space):
    """Vectors of floats between `low` and `high`, each bound per element (infinite bounds
    allowed: samples there are normal, or exponential on a half-bounded side)."""

    def __init__(self, low: Sequence[float], high: Sequence[float]):
        self.low, self.high = [float(v) for v in low], [float(v) for v in high]
        if len(self.low) != len(self.high) or any(a > b for a, b in zip(self.low, self.high)):
            raise ArgumentError(f"Box takes bounds of one length with low <= high, got "
                                f"{low!r} and {high!r}")

    def __repr__(self) -> str:
        return f"Box(low={self.low}, high={self.high})"

    @property
    def shape(self) -> tuple[int]:
        return (len(self.low),)

    def contains(self, value: Any) -> bool:
        """Whether `value` is a sequence of the right length inside the bounds."""
        try:
            values = [float(v) for v in value]
        except (TypeError, ValueError):
            return False
        return len(values) == len(self.low) and all(
            a <= v <= b for a, v, b in zip(self.low, values, self.high))

    def sample(self, rng: random.Random) -> list[float]:
        out = []
        for a, b in zip(self.low, self.high):
            if math.isinf(a) and math.isinf(b):
                out.append(rng.gauss(0.0, 1.0))
            elif math.isinf(b):
                out.append(a + rng.expovariate(1.0))
            elif math.isinf(a):
                out.append(b - rng.expovariate(1.0))
            else:
                out.append(rng.uniform(a, b))
        return out
