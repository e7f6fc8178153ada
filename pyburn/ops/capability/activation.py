"""Elementwise activations as one backend call: the "activation" capability (sigmoid, silu,
hardsigmoid and hardswish, each a handful of full-tensor ops as a composite).

The values and the gradients are PyTorch's, breakpoints included: hardsigmoid's slope is
1/6 strictly between -3 and 3 and 0 elsewhere (NaN too); hardswish's is 0 up to -3
inclusive, ``(2x + 3) / 6`` below 3 and 1 from 3 on (NaN too).
"""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, result, wrap
from ...tape import Grads, is_grad_enabled
from ..math_ops import where
from .record import Capability

#: the activations the capability computes
NAMES = ("sigmoid", "silu", "hardsigmoid", "hardswish")


def activation(x: Tensor, name: str) -> Tensor:
    """The backend's activation `name` (one of `NAMES`) of floating-point x."""
    backend: Any = x.device.backend  # a backend that offers "activation"
    handle = backend.activation(x._h, name)
    # sigmoid's output, outside the graph, for a first-order backward pass (only a recorded
    # call, whose input requires grad, has one)
    saved = wrap(handle, x.shape, x.dtype, x.device) if (
        name == "sigmoid" and x.requires_grad) else None
    return result(handle, x.shape, x.dtype, "activation", (x,), name=name, out=saved)


def _activation_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """With s = sigmoid(x): ``g * s * (1 - s)`` for sigmoid, ``g * s * (1 + x * (1 - s))``
    for silu (as PyTorch writes both), ``g / 6`` strictly inside (-3, 3) for hardsigmoid,
    and for hardswish 0 up to -3, ``g * (x / 3 + 1/2)`` below 3, g from there. A first-order
    pass reads sigmoid's saved output; a recorded one (create_graph) computes s again from x,
    so that a second derivative sees it depend on x."""
    x, name = inputs[0], ctx["name"]
    if name == "hardsigmoid":
        return (where((x > -3.0) & (x < 3.0), g / 6.0, 0.0),)
    if name == "hardswish":
        return (where(x <= -3.0, 0.0, where(x < 3.0, g * (x / 3.0 + 0.5), g)),)
    s = ctx["out"] if name == "sigmoid" and not is_grad_enabled() else activation(x, "sigmoid")
    if name == "sigmoid":
        return (g * s * (1.0 - s),)
    return (g * s * (x * (1.0 - s) + 1.0),)


ACTIVATION = Capability(
    "activation", ("activation",),
    """``activation(x, name)``: the elementwise activation `name` of floating-point x, a new
    handle of x's shape and dtype: "sigmoid" ``1 / (1 + exp(-x))``, "silu" ``x *
    sigmoid(x)``, "hardsigmoid" ``min(max(x + 3, 0), 6) / 6`` and "hardswish" ``x * min(max(x
    + 3, 0), 6) / 6`` (PyTorch's definitions: NaN stays NaN, hardswish(-inf) is NaN), the
    sigmoid accurate in relative terms for large negative x (``e / (1 + e)`` with ``e =
    exp(x)`` there).""",
    "pyburn.sigmoid, pyburn.nn.functional.silu, .hardsigmoid, .hardswish",
    rules={"activation": _activation_rule},
    onnx={"activation": "Sigmoid, Mul, HardSigmoid, HardSwish"})
