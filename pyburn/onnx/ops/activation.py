"""ONNX activation operators and the softmax family, on `pyburn.nn.functional`.

Softmax, LogSoftmax and Hardmax changed meaning at opset 13: before it they flatten the
input to 2-d at `axis` (default 1) and normalise each row of the flattened view; from 13 they
normalise along the one dim `axis` (default -1). One function per op computes along a dim;
the pre-13 registrations wrap it in the flattening.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pyburn
import pyburn.nn.functional as F

from ... import Tensor, where
from ...shape import norm_dim
from ..registry import check, onnx_op

#: the spacing of float32 numbers near 1: ONNX keeps float attributes in float32
_FLOAT32_EPS = 2.0 ** -23


@onnx_op("Relu", since=6)
def relu(x: Tensor) -> Tensor:
    """Relu: max(x, 0)."""
    return F.relu(x)


@onnx_op("LeakyRelu", since=6)
def leaky_relu(x: Tensor, *, alpha: float = 0.01) -> Tensor:
    """LeakyRelu: x where x >= 0, else alpha * x."""
    return F.leaky_relu(x, alpha)


@onnx_op("PRelu", since=7)
def prelu(x: Tensor, slope: Tensor) -> Tensor:
    """PRelu: x where x >= 0, else slope * x (slope broadcasts to x)."""
    return where(x < 0, x * slope, x)


@onnx_op("Elu", since=6)
def elu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """Elu: x where x > 0, else alpha * (exp(x) - 1)."""
    return F.elu(x, alpha)


@onnx_op("Selu", since=6)
def selu(x: Tensor, *, alpha: float = 1.67326319217681884765625,
         gamma: float = 1.05070102214813232421875) -> Tensor:
    """Selu: gamma * x where x > 0, else gamma * alpha * (exp(x) - 1)."""
    return F.elu(x, alpha) * gamma


@onnx_op("Celu", since=12)
def celu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """Celu: x where x > 0, else alpha * (exp(x / alpha) - 1)."""
    return F.celu(x, alpha)


@onnx_op("Gelu", since=20)
def gelu(x: Tensor, *, approximate: str = "none") -> Tensor:
    """Gelu: x * Phi(x), or its tanh approximation (approximate="tanh")."""
    return F.gelu(x, approximate)


@onnx_op("HardSigmoid", since=6)
def hard_sigmoid(x: Tensor, *, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """HardSigmoid: alpha * x + beta clipped to [0, 1]; PyTorch's hardsigmoid (alpha 1/6 and
    beta 1/2, as float32 attributes hold them) is `F.hardsigmoid`."""
    if (math.isclose(alpha, 1.0 / 6.0, rel_tol=_FLOAT32_EPS)
            and math.isclose(beta, 0.5, rel_tol=_FLOAT32_EPS)):
        return F.hardsigmoid(x)
    y = x * alpha + beta
    return where(y <= 0, 0.0, where(y >= 1, 1.0, y))


@onnx_op("HardSwish", since=14)
def hard_swish(x: Tensor) -> Tensor:
    """HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 1/2."""
    return F.hardswish(x)


@onnx_op("Mish", since=18)
def mish(x: Tensor) -> Tensor:
    """Mish: x * tanh(softplus(x))."""
    return F.mish(x)


@onnx_op("Sigmoid", since=6)
def sigmoid(x: Tensor) -> Tensor:
    """Sigmoid: 1 / (1 + exp(-x))."""
    return F.sigmoid(x)


@onnx_op("Tanh", since=6)
def tanh(x: Tensor) -> Tensor:
    """Tanh: the hyperbolic tangent."""
    return F.tanh(x)


@onnx_op("Softplus", since=1)
def softplus(x: Tensor) -> Tensor:
    """Softplus: log(1 + exp(x))."""
    return F.softplus(x)


@onnx_op("Softsign", since=1)
def softsign(x: Tensor) -> Tensor:
    """Softsign: x / (1 + |x|)."""
    return F.softsign(x)


@onnx_op("Swish", since=24)
def swish(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """Swish: x * sigmoid(alpha * x)."""
    return x * (x * alpha).sigmoid()


@onnx_op("ThresholdedRelu", since=10)
def thresholded_relu(x: Tensor, *, alpha: float = 1.0) -> Tensor:
    """ThresholdedRelu: x where x > alpha, else 0."""
    return where(x > alpha, x, 0.0)


@onnx_op("Shrink", since=9)
def shrink(x: Tensor, *, bias: float = 0.0, lambd: float = 0.5) -> Tensor:
    """Shrink: x + bias below -lambd, x - bias above lambd, 0 between, in x's dtype."""
    y = where(x < -lambd, x + bias, where(x > lambd, x - bias, 0.0))
    return y.cast(x.dtype)


# ---- softmax family ---------------------------------------------------------------------

def _hardmax(x: Tensor, dim: int) -> Tensor:
    """1 at the first maximum along `dim`, 0 elsewhere, in x's dtype."""
    if x.numel() == 0:
        return x
    first = x.argmax(dim, keepdim=True)
    shape = [1] * x.ndim
    shape[dim] = x.shape[dim]
    positions = pyburn.arange(x.shape[dim], device=x.device).reshape(shape)
    return (positions == first).cast(x.dtype)


_ALONG: dict[str, Callable[[Tensor, int], Tensor]] = {
    "Softmax": F.softmax, "LogSoftmax": F.log_softmax, "Hardmax": _hardmax,
}


def _register_softmax(op_type: str, fn: Callable[[Tensor, int], Tensor]) -> None:
    def flattened(input: Tensor, *, axis: int = 1) -> Tensor:
        d = norm_dim(axis, input.ndim)
        rows = math.prod(input.shape[:d])
        cols = math.prod(input.shape[d:])
        return fn(input.reshape(rows, cols), 1).reshape(input.shape)

    def along(input: Tensor, *, axis: int = -1) -> Tensor:
        check(input.ndim > 0, f"{op_type} needs a tensor of rank >= 1")
        return fn(input, norm_dim(axis, input.ndim))

    name = "log_softmax" if op_type == "LogSoftmax" else op_type.lower()
    flattened.__name__ = flattened.__qualname__ = f"{name}_1"
    flattened.__doc__ = (f"{op_type} (opsets 1-12): the input flattened to 2-d at `axis`, "
                         f"each row normalised.")
    along.__name__ = along.__qualname__ = name
    along.__doc__ = f"{op_type}: normalised along the dim `axis`."
    # module attributes, so that generated code can name them
    globals()[flattened.__name__] = onnx_op(op_type, since=1)(flattened)
    globals()[along.__name__] = onnx_op(op_type, since=13)(along)


for _name, _fn in _ALONG.items():
    _register_softmax(_name, _fn)
