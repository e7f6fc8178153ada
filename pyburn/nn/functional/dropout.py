"""Dropout: zero random elements (or whole channels) during training and rescale the rest so
that the expected value is unchanged. The masks come from ``pyburn.rand`` (the Philox
generator), so ``pyburn.manual_seed`` makes them reproducible on every device.

``inplace=`` is accepted for PyTorch compatibility; the result is always a new tensor.
"""

from __future__ import annotations

from ... import ArgumentError, Tensor, rand, where
from .windows import check_min_rank, check_rank

# SELU's negative saturation value, -scale * alpha: what alpha dropout sets dropped units to
_SELU_SATURATION = -1.0507009873554804934193349852946 * 1.6732632423543772848170429916717


def _check_p(p: float, op: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{op}: p must be in [0, 1], got {p}")


def _keep_mask(x: Tensor, p: float, shape: tuple[int, ...]) -> Tensor:
    """A bool tensor of `shape` (broadcastable to x), each entry True with probability 1 - p."""
    return rand(shape, dtype=x.dtype, device=x.device) >= p


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """In training, each element is zeroed with probability `p` and the others are scaled by
    ``1 / (1 - p)``; otherwise the input is returned unchanged.

    >>> import pyburn, pyburn.nn.functional as F
    >>> x = pyburn.ones(1000, device="flex")
    >>> F.dropout(x, 0.5, training=False) is x
    True
    >>> sorted(set(F.dropout(x, 0.5).tolist()))
    [0.0, 2.0]
    """
    _check_p(p, "dropout")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return where(_keep_mask(input, p, input.shape), input * (1.0 / (1.0 - p)), 0.0)


def _feature_dropout(input: Tensor, p: float, training: bool, nd: int, op: str) -> Tensor:
    """Dropout of whole channels: one draw per (sample, channel) of an input with `nd`
    spatial dims, batched (N, C, ...) or not (C, ...)."""
    _check_p(p, op)
    check_rank(input, (nd + 1, nd + 2), op, "N, C, " + ", ".join("DHW"[3 - nd:]) + " or C, ...")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    shape = input.shape[:input.ndim - nd] + (1,) * nd
    return where(_keep_mask(input, p, shape), input * (1.0 / (1.0 - p)), 0.0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of input (N, C, L) or (C, L) with probability `p` (scaling the
    others by ``1 / (1 - p)``)."""
    return _feature_dropout(input, p, training, 1, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of input (N, C, H, W) or (C, H, W) with probability `p`."""
    return _feature_dropout(input, p, training, 2, "dropout2d")


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of input (N, C, D, H, W) or (C, D, H, W) with probability `p`."""
    return _feature_dropout(input, p, training, 3, "dropout3d")


def _alpha(input: Tensor, p: float, training: bool, mask_shape: tuple[int, ...],
           op: str) -> Tensor:
    _check_p(p, op)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    # dropped units take SELU's saturation value; a and b restore mean 0 and variance 1
    a = ((1.0 - p) * (1.0 + p * _SELU_SATURATION**2)) ** -0.5
    b = -a * _SELU_SATURATION * p
    return where(_keep_mask(input, p, mask_shape), input, _SELU_SATURATION) * a + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative saturation value and
    an affine correction keeps the mean and variance of the input."""
    return _alpha(input, p, training, input.shape, "alpha_dropout")


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """`alpha_dropout` of whole channels (dim 1) of input (N, C, ...)."""
    check_min_rank(input, 2, "feature_alpha_dropout", "N, C, ...")
    shape = input.shape[:2] + (1,) * (input.ndim - 2)
    return _alpha(input, p, training, shape, "feature_alpha_dropout")
