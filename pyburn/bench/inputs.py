"""Benchmark inputs: one set of float32 numbers, handed to pyburn and to every peer.

The numbers come from Python's own generator (no numpy needed, so they are the same under
Pyodide) and are rounded to float32 once; pyburn, numpy, PyTorch and plain Python then all
start from exactly the same values.
"""

from __future__ import annotations

import math
import random
from array import array
from dataclasses import dataclass
from typing import Any

import pyburn

from ..shape import Shape


@dataclass(frozen=True)
class Floats:
    """A float32 array of `shape` with values uniform in [-1, 1)."""

    shape: Shape
    data: array  # typecode "f", row-major

    @classmethod
    def random(cls, shape: Shape, seed: int) -> Floats:
        """Fresh random values for `shape`, the same for the same seed on every platform."""
        uniform = random.Random(seed).uniform
        return cls(shape, array("f", [uniform(-1.0, 1.0) for _ in range(math.prod(shape))]))

    def scaled(self, factor: float) -> Floats:
        """These values times `factor` (rounded to float32 again)."""
        return Floats(self.shape, array("f", [v * factor for v in self.data]))

    def tensor(self, device: str) -> pyburn.Tensor:
        """The values as a pyburn float32 tensor on `device`."""
        return pyburn.tensor(self.data.tobytes(), shape=self.shape, dtype=pyburn.float32,
                             device=device)

    def numpy(self, np: Any) -> Any:
        """The values as a numpy float32 array (`np` is the numpy module)."""
        return np.array(self.data, dtype=np.float32).reshape(self.shape)

    def torch(self, torch: Any) -> Any:
        """The values as a PyTorch float32 CPU tensor (`torch` is the torch module)."""
        return torch.tensor(self.data.tolist(), dtype=torch.float32).reshape(self.shape)

    def rows(self) -> list[list[float]]:
        """The values as plain Python: a list of rows (the last dim) of floats."""
        values = self.data.tolist()
        width = self.shape[-1] if self.shape else 1
        return [values[i:i + width] for i in range(0, len(values), width)]


def described(shape: Shape) -> str:
    """A case's words for a float32 tensor of `shape`: its dims and its size.

    >>> described((1, 512, 1024)), described((4, 16, 32)), described((2, 2))
    ('1x512x1024 f32 (2 MiB)', '4x16x32 f32 (8 KiB)', '2x2 f32 (16 B)')
    """
    nbytes = 4 * math.prod(shape)
    shift, unit = ((20, "MiB") if nbytes >= 1 << 20 else (10, "KiB") if nbytes >= 1 << 10
                   else (0, "B"))
    return f"{'x'.join(map(str, shape))} f32 ({nbytes >> shift} {unit})"
