"""Module exporters for the feed-forward layers of `pyburn.nn`: each layer call becomes its
ONNX operator with the layer's parameters as initializers.

Each exporter accepts the configurations its operator expresses exactly and declines the
rest (returns None), which are then traced op by op: a convolution with circular padding,
an unbatched input where ONNX wants a batch dim, a LayerNorm below opset 17, a GELU below
opset 20 (where ONNX has no Gelu).
"""

from __future__ import annotations

from typing import Any

from ... import nn
from ..._tensor import Tensor
from ...ops.creation import ones, zeros
from .builder import Builder
from .registry import Plan, exports
from .trace import Event


def floating(x: Any, rank: int | tuple[int, ...] | None = None) -> bool:
    """Whether `x` is a floating-point tensor (of one of the ranks given)."""
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
        return False
    return rank is None or x.ndim in ((rank,) if isinstance(rank, int) else rank)


def _optional(b: Builder, t: Tensor | None) -> list[str]:
    """[t's initializer], or [] for an absent parameter."""
    return [] if t is None else [b.param(t)]


# ---- linear and embedding ----------------------------------------------------------------------
@exports(nn.Linear)
def _linear(m: nn.Linear, opset: int, input: Any) -> Plan | None:
    if not floating(input) or input.ndim < 1 or input.dtype is not m.weight.dtype:
        return None
    return Plan((input,), _emit_linear, {"rank": input.ndim})


def _emit_linear(b: Builder, ev: Event, outs: list[str]) -> None:
    m, x = ev.module, b.value(ev.inputs[0])
    if ev.ctx["rank"] == 2:
        b.node("Gemm", [x, b.param(m.weight), *_optional(b, m.bias)], outs[0], transB=1)
        return
    weight = b.param(m.weight, m.weight.mT, "_t")
    if m.bias is None:
        b.node("MatMul", [x, weight], outs[0])
    else:
        b.node("Add", [b.node("MatMul", [x, weight]), b.param(m.bias)], outs[0])


@exports(nn.Embedding)
def _embedding(m: nn.Embedding, opset: int, input: Any) -> Plan | None:
    if m.max_norm is not None or not isinstance(input, Tensor) or not input.dtype.is_integer:
        return None
    return Plan((input,), _emit_embedding)


def _emit_embedding(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Gather", [b.param(ev.module.weight), b.value(ev.inputs[0])], outs[0], axis=0)


# ---- convolutions --------------------------------------------------------------------------------
@exports(nn.Conv1d, nn.Conv2d, nn.Conv3d)
def _conv(m: Any, opset: int, input: Any) -> Plan | None:
    if m.padding_mode != "zeros" or not floating(input, m.nd + 2):
        return None
    if m.padding == "valid":
        pairs = [(0, 0)] * m.nd
    elif m.padding == "same":
        totals = [d * (k - 1) for d, k in zip(m.dilation, m.kernel_size)]
        pairs = [(t // 2, t - t // 2) for t in totals]
    else:
        pairs = [(p, p) for p in m.padding]
    return Plan((input,), _emit_conv, {"pads": [p for p, _ in pairs] + [a for _, a in pairs]})


def _emit_conv(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    b.node("Conv", [b.value(ev.inputs[0]), b.param(m.weight), *_optional(b, m.bias)], outs[0],
           kernel_shape=list(m.kernel_size), strides=list(m.stride), pads=ev.ctx["pads"],
           dilations=list(m.dilation), group=m.groups)


@exports(nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
def _conv_transpose(m: Any, opset: int, input: Any, output_size: Any = None) -> Plan | None:
    if not floating(input, m.nd + 2):
        return None
    return Plan((input,), _emit_conv_transpose,
                {"output_padding": list(m._output_padding(input, output_size))})


def _emit_conv_transpose(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    b.node("ConvTranspose", [b.value(ev.inputs[0]), b.param(m.weight), *_optional(b, m.bias)],
           outs[0], kernel_shape=list(m.kernel_size), strides=list(m.stride),
           pads=list(m.padding) * 2, dilations=list(m.dilation), group=m.groups,
           output_padding=b.static(ev, "output_padding"))


# ---- normalisation -----------------------------------------------------------------------------
def _affine(m: Any, size: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """A norm's weight and bias, with ones and zeros for absent ones."""
    weight = m.weight if m.weight is not None else ones(size, dtype=like.dtype,
                                                        device=like.device)
    bias = m.bias if m.bias is not None else zeros(size, dtype=like.dtype, device=like.device)
    return weight, bias


@exports(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _batch_norm(m: Any, opset: int, input: Any) -> Plan | None:
    if m.training or m.running_mean is None or not floating(input, m.ranks):
        return None
    return Plan((input,), _emit_batch_norm)


def _emit_batch_norm(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    weight, bias = _affine(m, m.num_features, m.running_mean)
    b.node("BatchNormalization", [b.value(ev.inputs[0]), b.param(weight), b.param(bias),
                                  b.param(m.running_mean), b.param(m.running_var)], outs[0],
           epsilon=float(m.eps))


@exports(nn.LayerNorm)
def _layer_norm(m: nn.LayerNorm, opset: int, input: Any) -> Plan | None:
    count = len(m.normalized_shape)
    if opset < 17 or not floating(input) or input.shape[input.ndim - count:] != \
            m.normalized_shape:
        return None
    return Plan((input,), _emit_layer_norm)


def _emit_layer_norm(b: Builder, ev: Event, outs: list[str]) -> None:
    m, like = ev.module, b.trace.values[ev.inputs[0]].tensor
    scale = m.weight if m.weight is not None else ones(m.normalized_shape, dtype=like.dtype,
                                                       device=like.device)
    b.node("LayerNormalization", [b.value(ev.inputs[0]), b.param(scale),
                                  *_optional(b, m.bias)], outs[0],
           axis=-len(m.normalized_shape), epsilon=float(m.eps))


@exports(nn.GroupNorm)
def _group_norm(m: nn.GroupNorm, opset: int, input: Any) -> Plan | None:
    if not floating(input) or input.ndim < 2 or input.shape[1] != m.num_channels:
        return None
    return Plan((input,), _emit_group_norm, {"rank": input.ndim})


def _emit_group_norm(b: Builder, ev: Event, outs: list[str]) -> None:
    # ONNX's GroupNormalization changed meaning at opset 21: instance norm over (N, G, -1)
    # is the same computation at every opset
    m, x = ev.module, b.value(ev.inputs[0])
    like = b.trace.values[ev.inputs[0]].tensor
    groups = m.num_groups
    grouped = b.node("Reshape", [x, b.ints([0, groups, -1], "shape")])
    normed = b.node("InstanceNormalization",
                    [grouped, b.tensor(ones(groups, dtype=like.dtype, device=like.device), "one"),
                     b.tensor(zeros(groups, dtype=like.dtype, device=like.device), "zero")],
                    epsilon=float(m.eps))
    if not m.affine:
        b.node("Reshape", [normed, b.node("Shape", [x])], outs[0])
        return
    y = b.node("Reshape", [normed, b.node("Shape", [x])])
    per_channel = (m.num_channels,) + (1,) * (ev.ctx["rank"] - 2)
    weight, bias = _affine(m, m.num_channels, like)
    y = b.node("Mul", [y, b.param(weight, weight.reshape(per_channel), "_c")])
    b.node("Add", [y, b.param(bias, bias.reshape(per_channel), "_c")], outs[0])


@exports(nn.Flatten)
def _flatten(m: nn.Flatten, opset: int, input: Any) -> Plan | None:
    # ONNX's Flatten always makes a matrix: the same as pyburn's only from dim 1 to the end
    if not isinstance(input, Tensor) or input.ndim < 2 or m.start_dim not in (1, 1 - input.ndim) \
            or m.end_dim not in (-1, input.ndim - 1):
        return None
    return Plan((input,), _emit_flatten)


def _emit_flatten(b: Builder, ev: Event, outs: list[str]) -> None:
    b.node("Flatten", [b.value(ev.inputs[0])], outs[0], axis=1)
