"""Shared by the optimizer tests: deterministic parameters and gradient sequences, built once
as nested lists and turned into pyburn and PyTorch tensors, and a float32 comparison."""

from __future__ import annotations

import random
from typing import Any

import pyburn

#: the model every optimizer test trains: a weight matrix and a bias
SHAPES = ((3, 4), (4,))
STEPS = 20
#: float32 trajectories: ~20 steps of a few roundings each, amplified a little by the
#: divisions of the adaptive methods
RTOL, ATOL = 2e-5, 2e-6


def _nested(rng: random.Random, shape: tuple[int, ...], zeros: float) -> Any:
    if not shape:
        return 0.0 if rng.random() < zeros else rng.uniform(-1.0, 1.0)
    return [_nested(rng, shape[1:], zeros) for _ in range(shape[0])]


def initial_values(seed: int = 0) -> list[Any]:
    """The starting values of the parameters."""
    rng = random.Random(seed)
    return [_nested(rng, shape, 0.0) for shape in SHAPES]


def gradient_sequence(seed: int = 1, steps: int = STEPS) -> list[list[Any]]:
    """One gradient per parameter per step; about one entry in ten is exactly zero (where
    sign-based and accumulating methods have edge cases)."""
    rng = random.Random(seed)
    return [[_nested(rng, shape, 0.1) for shape in SHAPES] for _ in range(steps)]


def pyburn_params(values: list[Any], dev: pyburn.Device) -> list[pyburn.Tensor]:
    """Leaf parameters on `dev` that require grad."""
    return [pyburn.tensor(v, device=dev, requires_grad=True) for v in values]


def torch_params(torch: Any, values: list[Any]) -> list[Any]:
    """The same parameters as float32 PyTorch leaves."""
    return [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in values]


def assert_close(got: pyburn.Tensor, expected: Any, what: str, rtol: float = RTOL,
                 atol: float = ATOL) -> None:
    """`got` (pyburn) equals `expected` (a torch tensor) within float32 tolerance."""
    import numpy as np

    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=what)
