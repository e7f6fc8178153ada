"""Module exporters for the activation layers of `pyburn.nn` that ONNX has an operator for.

Most are one table entry: (the ONNX operator, its attributes from the module, the opset that
introduced it). The others (LogSigmoid, Tanhshrink, Softmin, GLU, ...) and any activation
whose settings ONNX cannot express are traced as the primitives they are made of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import nn
from .builder import Builder
from .layers import floating
from .registry import Plan, exports
from .trace import Event

#: module type -> (ONNX operator, its attributes, opset it needs, whether this module's
#: settings are the ones ONNX computes)
_SIMPLE: dict[type, tuple[str, Callable[[Any], dict], int, Callable[[Any], bool]]] = {
    nn.ReLU: ("Relu", lambda m: {}, 1, lambda m: True),
    nn.Sigmoid: ("Sigmoid", lambda m: {}, 1, lambda m: True),
    nn.Tanh: ("Tanh", lambda m: {}, 1, lambda m: True),
    nn.Softsign: ("Softsign", lambda m: {}, 1, lambda m: True),
    nn.LeakyReLU: ("LeakyRelu", lambda m: {"alpha": float(m.negative_slope)}, 1,
                   lambda m: True),
    nn.ELU: ("Elu", lambda m: {"alpha": float(m.alpha)}, 1, lambda m: True),
    nn.CELU: ("Celu", lambda m: {"alpha": float(m.alpha)}, 12, lambda m: True),
    nn.SELU: ("Selu", lambda m: {"alpha": 1.6732632423543772, "gamma": 1.0507009873554805},
              1, lambda m: True),
    nn.Hardsigmoid: ("HardSigmoid", lambda m: {"alpha": 1.0 / 6.0, "beta": 0.5}, 1,
                     lambda m: True),
    nn.Hardswish: ("HardSwish", lambda m: {}, 14, lambda m: True),
    nn.Mish: ("Mish", lambda m: {}, 18, lambda m: True),
    # ONNX's Softplus has no threshold; past 20, log(1 + e^x) and x agree in float32
    nn.Softplus: ("Softplus", lambda m: {}, 1, lambda m: m.beta == 1 and m.threshold == 20),
    nn.GELU: ("Gelu", lambda m: {"approximate": m.approximate.encode()}, 20, lambda m: True),
    nn.Softmax: ("Softmax", lambda m: {"axis": m.dim}, 13, lambda m: m.dim is not None),
    nn.LogSoftmax: ("LogSoftmax", lambda m: {"axis": m.dim}, 13, lambda m: m.dim is not None),
}


@exports(*_SIMPLE)
def _simple(m: Any, opset: int, input: Any) -> Plan | None:
    op, attrs, since, expressible = _SIMPLE[type(m)]
    if opset < since or not floating(input) or not expressible(m):
        return None
    return Plan((input,), _emit_simple, {"op": op, "attrs": attrs(m)})


def _emit_simple(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node(ev.ctx["op"], [b.value(ev.inputs[0])], outs[0], **ev.ctx["attrs"])


@exports(nn.Hardtanh, nn.ReLU6)
def _hardtanh(m: Any, opset: int, input: Any) -> Plan | None:
    return Plan((input,), _emit_clip) if floating(input) else None


def _emit_clip(b: Builder, ev: Event, outs: list[str]) -> None:
    dtype = b.trace.values[ev.inputs[0]].dtype.name
    m = ev.module
    b.node("Clip", [b.value(ev.inputs[0]), b.number(m.min_val, dtype, "min"),
                    b.number(m.max_val, dtype, "max")], outs[0])


@exports(nn.SiLU)
def _silu(m: Any, opset: int, input: Any) -> Plan | None:
    return Plan((input,), _emit_silu) if floating(input) else None


def _emit_silu(b: Builder, ev: Event, outs: list[str]) -> None:
    x = b.value(ev.inputs[0])
    b.node("Mul", [x, b.node("Sigmoid", [x])], outs[0])


@exports(nn.PReLU)
def _prelu(m: nn.PReLU, opset: int, input: Any) -> Plan | None:
    if not floating(input) or (m.num_parameters > 1 and input.ndim < 2):
        return None
    return Plan((input,), _emit_prelu, {"rank": input.ndim})


def _emit_prelu(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    # the slopes go along dim 1: (C, 1, ..., 1) broadcasts against (N, C, ...)
    shape = (m.num_parameters,) + (1,) * (ev.ctx["rank"] - 2) if m.num_parameters > 1 else (1,)
    b.node("PRelu", [b.value(ev.inputs[0]), b.param(m.weight, m.weight.reshape(shape), "_c")],
           outs[0])
