"""Activation functions and the softmax family, with PyTorch's names, arguments and results.

Each is a few elementwise tensor ops. Two rules keep the recorded gradients equal to
PyTorch's: kinks are written with ``where`` on the same side PyTorch's backward takes (relu's
gradient at 0 is 0, hardtanh's at its bounds is 0), never with ``maximum``/``clamp``, whose
gradient is shared at ties; and every branch, even one ``where`` throws away, sees only finite
values (exp is only taken of non-positive numbers), so no gradient multiplies 0 by inf.
softmax and log_softmax are one backend call where the backend offers the "softmax"
capability, sigmoid, silu, hardsigmoid and hardswish where it offers "activation"
(`capability.offered`).

``inplace=`` is accepted where PyTorch has it, for source compatibility: pyburn tensors are
values, so the result is always a new tensor and the input is left as it was.
"""

from __future__ import annotations

import math

from ... import ArgumentError, DTypeError, ShapeError, Tensor, default_float, where
from ...ops import capability
from ...ops.capability import ACTIVATION, SOFTMAX, offered
from ...ops.math_ops import clamp
from ...precision import autocast_inputs
from ...shape import norm_dim
from ...tape import is_grad_enabled

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float(x: Tensor, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op} expects a tensor, got {type(x).__name__}")
    return x if x.dtype.is_floating_point else x.cast(default_float)


def _clip(x: Tensor, low: float, high: float) -> Tensor:
    """x limited to [low, high], with zero gradient at and beyond the bounds. Where nothing
    records a gradient the same values come from ``maximum`` and ``minimum`` (NaN stays NaN
    either way), two passes over x instead of four."""
    if not (x.device.is_autodiff and is_grad_enabled()):
        return clamp(x, low, high)
    return where(x <= low, low, where(x >= high, high, x))


def _log1p_exp(x: Tensor) -> Tensor:
    """log(1 + exp(x)) for every x: ``max(x, 0) + log1p(exp(-|x|))``, whose gradient is
    sigmoid(x) everywhere (0.5 at 0)."""
    positive = x > 0
    return where(positive, x, 0.0) + (-where(positive, x, -x)).exp().log1p()


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0) (NaN stays NaN).

    >>> import pyburn, pyburn.nn.functional as F
    >>> F.relu(pyburn.tensor([-1.0, 2.0], device="flex")).tolist()
    [0.0, 2.0]
    """
    return input.relu()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``negative_slope * x``."""
    return where(input > 0, input, input * negative_slope)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """`leaky_relu` with a learned slope: `weight` has 1 element or one per channel (dim 1
    of the input)."""
    if not isinstance(weight, Tensor) or weight.ndim > 1:
        raise ShapeError(f"prelu: weight must be a 0-d or 1-d tensor, got "
                         f"{getattr(weight, 'shape', weight)}")
    count = weight.numel()
    if count != 1:
        channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim else 1)
        if count != channels:
            raise ShapeError(f"prelu: weight of shape {weight.shape} needs 1 or {channels} "
                             f"(the channels of input shape {input.shape}) elements")
        if input.ndim >= 2:
            weight = weight.reshape((count,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * weight)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``alpha * (exp(x) - 1)``."""
    x = _float(input, "elu")
    return where(x > 0, x, where(x > 0, 0.0, x).expm1() * alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants (alpha ~ 1.6733,
    scale ~ 1.0507)."""
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``alpha * (exp(x / alpha) - 1)``."""
    x = _float(input, "celu")
    return where(x > 0, x, (where(x > 0, 0.0, x) / alpha).expm1() * alpha)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (Phi the standard normal CDF); ``approximate="tanh"`` uses
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    x = _float(input, "gelu")
    if approximate == "none":
        return x * ((x * (1.0 / math.sqrt(2.0))).erf() + 1.0) * 0.5
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * (inner.tanh() + 1.0) * 0.5
    raise ArgumentError(f"gelu: approximate is 'none' or 'tanh', got {approximate!r}")


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), stable for large |x| (see `pyburn.sigmoid`)."""
    return _float(input, "sigmoid").sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _float(input, "tanh").tanh()


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    x = _float(input, "silu")
    if offered(ACTIVATION, x):
        return capability.activation(x, "silu")
    return x * sigmoid(x)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, and x itself where ``beta x > threshold``."""
    x = _float(input, "softplus")
    scaled = x * beta
    return where(scaled > threshold, x, _log1p_exp(scaled) / beta)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    x = _float(input, "mish")
    return x * softplus(x).tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    x = _float(input, "softsign")
    return x / (x.abs() + 1.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """0 below -3, 1 above 3, ``x / 6 + 1/2`` between."""
    x = _float(input, "hardsigmoid")
    if offered(ACTIVATION, x):
        return capability.activation(x, "hardsigmoid")
    return where(x <= -3.0, 0.0, where(x >= 3.0, 1.0, x / 6.0 + 0.5))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * hardsigmoid(x): 0 below -3, x above 3, ``x (x + 3) / 6`` between."""
    x = _float(input, "hardswish")
    if offered(ACTIVATION, x):
        return capability.activation(x, "hardswish")
    return where(x <= -3.0, 0.0, where(x >= 3.0, x, x * (x + 3.0) / 6.0))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]."""
    if min_val > max_val:
        raise ArgumentError(f"hardtanh: min_val {min_val} is larger than max_val {max_val}")
    return _clip(input, min_val, max_val)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = ``-log(1 + exp(-x))``, computed so that it neither overflows nor
    loses precision for large |x|."""
    return -_log1p_exp(-_float(input, "logsigmoid"))


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    x = _float(input, "tanhshrink")
    return x - x.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between (NaN stays NaN)."""
    if lambd < 0:
        raise ArgumentError(f"softshrink: lambd must be >= 0, got {lambd}")
    x = _float(input, "softshrink")
    inside = (x >= -lambd) & (x <= lambd)
    return where(inside, 0.0, where(x > lambd, x - lambd, x + lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0 (NaN stays NaN)."""
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """`value` where x <= threshold, else x (NaN stays NaN)."""
    return where(input <= threshold, value, input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of `dim` times the sigmoid of the second half."""
    d = norm_dim(dim, input.ndim)
    size = input.shape[d]
    if size % 2:
        raise ShapeError(f"glu: dim {dim} of input shape {input.shape} must have an even size")
    a, b = _float(input, "glu").chunk(2, d)
    return a * b.sigmoid()


def _softmax_input(input: Tensor, dim: int | None, dtype, op: str) -> tuple[Tensor, int]:
    if dim is None:
        raise ArgumentError(f"{op} needs dim= (the dim to normalise over)")
    if dtype is None:  # an explicit dtype is the caller's choice, autocast or not
        (x,) = autocast_inputs(op, input)
    else:
        x = input.cast(dtype)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op} needs a floating-point tensor, got {x.dtype.name}")
    if x.ndim == 0:
        norm_dim(dim, 1)
        return x, 0
    return x, norm_dim(dim, x.ndim)


def _shifted(x: Tensor, d: int) -> Tensor:
    """x minus its max along d: exp of the result cannot overflow. The max of a row with no
    finite entry is replaced by 0 (an all -inf row then gives NaN, as in PyTorch). The
    results using it do not depend on the shift, so it is detached: no gradient flows
    through the max."""
    top = x.amax(d, keepdim=True).detach()
    return x - where(top.isfinite(), top, 0.0)


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along `dim`, computed after subtracting the max.

    >>> import pyburn, pyburn.nn.functional as F
    >>> F.softmax(pyburn.tensor([0.0, 0.0], device="flex"), dim=0).tolist()
    [0.5, 0.5]
    """
    x, d = _softmax_input(input, dim, dtype, "softmax")
    if x.ndim == 0:
        return x * 0.0 + 1.0
    if offered(SOFTMAX, x):
        return capability.softmax(x, d, False)
    e = _shifted(x, d).exp()
    return e / e.sum(d, keepdim=True)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """``x - logsumexp(x)`` along `dim`."""
    x, d = _softmax_input(input, dim, dtype, "log_softmax")
    if x.ndim == 0:
        return x * 0.0
    if offered(SOFTMAX, x):
        return capability.softmax(x, d, True)
    shifted = _shifted(x, d)
    return shifted - shifted.exp().sum(d, keepdim=True).log()


def softmin(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """softmax(-x) along `dim`."""
    x, d = _softmax_input(input, dim, dtype, "softmin")
    return softmax(-x, d)
