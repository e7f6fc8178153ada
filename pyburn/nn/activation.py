"""Every activation of ``pyburn.nn.functional`` as a module, with PyTorch's class names,
arguments and ``repr``.

``inplace=`` is accepted where PyTorch has it, for source compatibility: pyburn tensors are
values, so the result is always a new tensor.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import empty_parameter


class _Fixed(Module):
    """An activation with no settings: ``forward`` applies `function`."""

    function: Any

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return type(self).function(input)


class _Inplace(_Fixed):
    """An activation whose only setting is PyTorch's `inplace` flag."""

    #: whether PyTorch's repr shows ``inplace=True`` for this class
    shows_inplace = True

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace and self.shows_inplace else ""


def _inplace_suffix(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class ReLU(_Inplace):
    """max(x, 0).

    >>> import pyburn
    >>> pyburn.nn.ReLU()(pyburn.tensor([-1.0, 2.0], device="flex")).tolist()
    [0.0, 2.0]
    """

    function = staticmethod(F.relu)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    function = staticmethod(F.selu)


class SiLU(_Inplace):
    """x * sigmoid(x) (swish)."""

    function = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    function = staticmethod(F.mish)


class Hardsigmoid(_Inplace):
    """0 below -3, 1 above 3, x / 6 + 1/2 between."""

    function = staticmethod(F.hardsigmoid)
    shows_inplace = False


class Hardswish(_Inplace):
    """x * hardsigmoid(x)."""

    function = staticmethod(F.hardswish)
    shows_inplace = False


class Sigmoid(_Fixed):
    """1 / (1 + exp(-x))."""

    function = staticmethod(F.sigmoid)


class Tanh(_Fixed):
    """The hyperbolic tangent."""

    function = staticmethod(F.tanh)


class Softsign(_Fixed):
    """x / (1 + |x|)."""

    function = staticmethod(F.softsign)


class LogSigmoid(_Fixed):
    """log(sigmoid(x)), computed without overflow."""

    function = staticmethod(F.logsigmoid)


class Tanhshrink(_Fixed):
    """x - tanh(x)."""

    function = staticmethod(F.tanhshrink)


class Threshold(Module):
    """`value` where x <= `threshold`, else x."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The thresholded input."""
        return F.threshold(input, self.threshold, self.value)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The clipped input."""
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class CELU(ELU):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.celu(input, self.alpha)


class LeakyReLU(Module):
    """x where x > 0, else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class PReLU(Module):
    """LeakyReLU with a learned slope: one shared (`num_parameters` 1) or one per channel
    (dim 1 of the input), initialised to `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = empty_parameter((num_parameters,), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope set to `init`."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GELU(Module):
    """x * Phi(x); ``approximate="tanh"`` uses the tanh approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softshrink(Module):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where |x| > lambd, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        """The activation applied elementwise."""
        return F.hardshrink(input, self.lambd)


class _AlongDim(Module):
    """An activation over one dim: `function` takes (input, dim)."""

    function: Any

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """The activation along `dim`."""
        return type(self).function(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """exp(x) / sum(exp(x)) along `dim`: each slice becomes a probability distribution.

    >>> import pyburn
    >>> pyburn.nn.Softmax(dim=-1)(pyburn.zeros(1, 4, device="flex")).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """

    function = staticmethod(F.softmax)


class LogSoftmax(_AlongDim):
    """log(softmax(x)) along `dim`, computed stably."""

    function = staticmethod(F.log_softmax)


class Softmin(_AlongDim):
    """softmax(-x) along `dim`."""

    function = staticmethod(F.softmin)


class GLU(_AlongDim):
    """Gated linear unit: the first half of `dim` times the sigmoid of the second half."""

    function = staticmethod(F.glu)

    def __init__(self, dim: int = -1):
        super().__init__(dim)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) at every position of (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        """The channel softmax."""
        return F.softmax(input, -3)
