"""Parameter initialisation, with ``torch.nn.init``'s names, arguments and formulas.

Every function fills its tensor in place (``assign_`` under ``no_grad``, so the tensor object
— a module's Parameter — stays the same) and returns it. Random values come from pyburn's
counter-based generator: after ``pyburn.manual_seed(s)`` the same model gets the same
weights on every device, those drawn from a normal distribution to about an ulp
(``generator=`` takes a `pyburn.Generator` instead).

Fans follow PyTorch: for a weight of shape (out, in, *kernel), fan_in is
``in * prod(kernel)`` and fan_out ``out * prod(kernel)``.

Under ``with skipped():`` the random fills (`uniform_`, `normal_`, `orthogonal_` and those
built on them) leave their tensors as created and draw nothing: a model whose every weight a
file will overwrite is built without the cost of drawing them (`pyburn.models.create` does
this for a strict load; on flex, in the browser, drawing a 3.5 M-parameter network's weights
takes seconds). The fills with fixed values (`constant_`, `zeros_`, `ones_`, `eye_`) still
run.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .._tensor import Tensor
from ..dtypes import DType, float32, float64
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops.creation import full, zeros
from ..ops.linalg import eye
from ..ops.random_tensors import rand, randn
from ..random import Generator
from ..tape import no_grad

__all__ = [
    "calculate_fan_in_and_fan_out", "calculate_gain", "constant_", "eye_", "kaiming_normal_",
    "kaiming_uniform_", "normal_", "ones_", "orthogonal_", "skipped", "uniform_",
    "xavier_normal_", "xavier_uniform_", "zeros_",
]

_LINEAR_GAIN = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of weights feeding `nonlinearity`: 1 for linear, conv and
    sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope^2)) for leaky_relu
    (`param` is the slope, 0.01 by default), 3/4 for selu."""
    if nonlinearity in _LINEAR_GAIN:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ArgumentError(f"calculate_gain: negative slope {slope!r} is not a number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError(f"calculate_gain: unknown nonlinearity {nonlinearity!r}; known: "
                        f"{', '.join(_LINEAR_GAIN)}, tanh, relu, leaky_relu, selu")


def calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight with at least 2 dims: (out, in, *kernel) gives
    (in * prod(kernel), out * prod(kernel))."""
    if tensor.ndim < 2:
        raise ShapeError(f"fan in and fan out need a tensor with at least 2 dims, got shape "
                         f"{tensor.shape}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


class _Skipping(threading.local):
    """Whether random fills are skipped, per thread (`skipped`)."""

    active = False


_skipping = _Skipping()


@contextmanager
def skipped() -> Iterator[None]:
    """Within the block, random initialisation leaves tensors as they were created and
    advances no generator (for a model whose weights are all about to be loaded).

    >>> import pyburn
    >>> with skipped():
    ...     layer = pyburn.nn.Linear(3, 2, device="flex")
    >>> layer.weight.abs().sum().item()
    0.0
    """
    previous, _skipping.active = _skipping.active, True
    try:
        yield
    finally:
        _skipping.active = previous


def _fill(tensor: Tensor, values: Tensor) -> Tensor:
    """Make `tensor` hold `values` (cast to its dtype), unrecorded, keeping the object."""
    with no_grad():
        return tensor.assign_(values)


def _work_dtype(tensor: Tensor, op: str) -> DType:
    """The dtype random values are drawn in: float64 for float64 tensors, else float32
    (float16 tensors get float32 draws rounded once, not float16 arithmetic)."""
    if not tensor.dtype.is_floating_point:
        raise DTypeError(f"{op} fills floating-point tensors, got {tensor.dtype.name}")
    return float64 if tensor.dtype is float64 else float32


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with values drawn uniformly from [a, b).

    >>> import pyburn
    >>> w = pyburn.nn.init.uniform_(pyburn.zeros(1000, device="flex"), -2.0, 2.0)
    >>> -2.0 <= w.min().item() and w.max().item() < 2.0
    True
    """
    if not a <= b:
        raise ArgumentError(f"uniform_: a={a} must not exceed b={b}")
    if _skipping.active:
        return tensor
    draws = rand(tensor.shape, dtype=_work_dtype(tensor, "uniform_"), device=tensor.device,
                  generator=generator)
    return _fill(tensor, draws * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with values drawn from the normal distribution N(mean, std^2)."""
    if std < 0:
        raise ArgumentError(f"normal_: std must be >= 0, got {std}")
    if _skipping.active:
        return tensor
    draws = randn(tensor.shape, dtype=_work_dtype(tensor, "normal_"), device=tensor.device,
                  generator=generator)
    return _fill(tensor, draws * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    return _fill(tensor, full(tensor.shape, val, dtype=tensor.dtype, device=tensor.device))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity matrix (ones on the diagonal)."""
    if tensor.ndim != 2:
        raise ShapeError(f"eye_ needs a 2-d tensor, got shape {tensor.shape}")
    return _fill(tensor, eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-b, b) with ``b = sqrt(3) * gain / sqrt(fan)``; `a` is the negative
    slope of a leaky_relu, `mode` picks fan_in (keeps forward variance) or fan_out
    (backward)."""
    if tensor.numel() == 0:  # nothing to fill, and a fan of 0 would divide by zero
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``."""
    if tensor.numel() == 0:
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times `gain`, drawn uniformly (Haar): the
    tensor is viewed as (shape[0], rest); its rows (or columns, whichever are fewer) come
    out orthonormal.

    The matrix is the Q factor of a Gaussian matrix, computed by Gram-Schmidt with one
    reorthogonalisation pass (as accurate as Householder QR, and made of matmuls that run
    on every device); its R factor has a positive diagonal, as PyTorch's sign fix gives."""
    if tensor.ndim < 2:
        raise ShapeError(f"orthogonal_ needs a tensor with at least 2 dims, got shape "
                         f"{tensor.shape}")
    rows = tensor.shape[0]
    cols = tensor.numel() // max(rows, 1)
    if rows == 0 or cols == 0 or _skipping.active:
        return tensor
    work = _work_dtype(tensor, "orthogonal_")
    gaussian = randn(rows, cols, dtype=work, device=tensor.device, generator=generator)
    tall = gaussian if rows >= cols else gaussian.T
    q = zeros(tall.shape, dtype=work, device=tensor.device)
    with no_grad():
        for j in range(tall.shape[1]):
            v = tall[:, j]
            for _ in range(2):  # the second pass removes what rounding left of earlier columns
                if j:
                    done = q[:, :j]
                    v = v - done @ (done.T @ v)
            q[:, j] = v / v.norm()
    q = q if rows >= cols else q.T
    return _fill(tensor, (q * gain).reshape(tensor.shape))
