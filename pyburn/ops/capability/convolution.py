"""Convolution as one backend call: the "conv", "conv_bias" and "conv_activation"
capabilities.

The three convolution ops are each other's adjoints: conv is linear in x and in w, its
gradient in x is the transposed convolution of g, and in w the weight gradient of x and g;
differentiating those again lands on the same three ops, so every order is covered. Each
gradient is computed only for an input that requires grad: a network's first layer needs no
gradient for its data, and each of these is a full convolution's work."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, recording, result
from ...errors import ArgumentError
from ...tape import Grads
from .record import Capability, Ints, Pads, windowed


def _cut(x: Tensor, padding: Pads) -> tuple[Tensor, tuple[tuple[int, int], ...]]:
    """x and `padding` (as a tuple of pairs) with every negative "after" turned into a cut
    of x's end (the adjoint of a transposed convolution whose output reaches past its last
    window)."""
    pairs = tuple((b, a) for b, a in padding)
    if all(a >= 0 for _, a in pairs):
        return x, pairs
    lead = x.ndim - len(pairs)
    for i, (_, a) in enumerate(pairs):
        if a < 0:
            x = x.narrow(lead + i, 0, x.shape[lead + i] + a)
    return x, tuple((b, max(a, 0)) for b, a in pairs)


def _geometry(stride: Ints, padding: Pads, dilation: Ints, groups: int) -> dict:
    return {"stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation),
            "groups": groups}


def conv(x: Tensor, w: Tensor, stride: Ints, padding: Pads, dilation: Ints, groups: int,
         bias: Tensor | None = None, activation: tuple | None = None) -> Tensor:
    """The backend's convolution of x (N, C, *S) with w (O, C/groups, *K), plus `bias` (O,)
    per output channel where given (the backend must offer "conv_bias" then), then
    `activation` where given (see `CONV_ACTIVATION`; only where nothing is recorded, for a
    gradient or an export: the recorded op has no activation in its rule); `padding` is a
    (before, after) pair per spatial dim, and a negative "after" cuts x."""
    x, padding = _cut(x, padding)
    stride, dilation = tuple(stride), tuple(dilation)
    inputs = (x, w) if bias is None else (x, w, bias)
    # no bias or activation argument at all without one: a backend with "conv" alone
    # takes neither
    extra: tuple = () if bias is None else (bias._h,)
    if activation is not None:
        if recording(*inputs):
            raise ArgumentError("a convolution with an activation cannot be recorded; apply "
                                "the activation after it")
        extra = (extra or (None,)) + (activation,)
    handle = x.device.backend.conv(x._h, w._h, stride, padding, dilation, groups, *extra)
    out = windowed(x.shape[2:], w.shape[2:], stride, padding, dilation)
    return result(handle, (x.shape[0], w.shape[0]) + out, x.dtype, "conv", inputs,
                  **_geometry(stride, padding, dilation, groups))


def conv_transpose(x: Tensor, w: Tensor, stride: Ints, padding: Ints, dilation: Ints,
                   groups: int, size: Ints) -> Tensor:
    """The backend's transposed convolution (the adjoint of `conv` in its input): x
    (N, O, *m) with w (O, C/groups, *K) gives (N, C, *size), cut from offset `padding`."""
    kernel = w.shape[2:]
    full = [(m - 1) * s + d * (k - 1) + 1
            for m, s, d, k in zip(x.shape[2:], stride, dilation, kernel)]
    # the padding of the convolution this is the adjoint of, for the backward rule
    pairs = [(p, f - z - p) for p, f, z in zip(padding, full, size)]
    handle = x.device.backend.conv_transpose(x._h, w._h, tuple(stride), tuple(padding),
                                             tuple(dilation), groups, tuple(size))
    return result(handle, (x.shape[0], w.shape[1] * groups) + tuple(size), x.dtype,
                  "conv_transpose", (x, w), **_geometry(stride, pairs, dilation, groups))


def conv_weight(x: Tensor, g: Tensor, kernel: Ints, stride: Ints, padding: Pads,
                dilation: Ints, groups: int) -> Tensor:
    """The backend's gradient of `conv` in its weight: x (N, C, *S) and the output's
    gradient g (N, O, *out) give (O, C/groups, *kernel)."""
    x, padding = _cut(x, padding)
    handle = x.device.backend.conv_weight(x._h, g._h, tuple(kernel), tuple(stride),
                                          tuple(padding), tuple(dilation), groups)
    return result(handle, (g.shape[1], x.shape[1] // groups) + tuple(kernel), x.dtype,
                  "conv_weight", (x, g), **_geometry(stride, padding, dilation, groups))


# ---- optional capabilities (pyburn.ops.capability) ------------------------------
# The three convolution ops are each other's adjoints: conv is linear in x and in w, its
# gradient in x is the transposed convolution of g, and in w the weight gradient of x and g;
# differentiating those again lands on the same three ops, so every order is covered. Each
# gradient is computed only for an input that requires grad: a network's first layer needs
# no gradient for its data, and each of these is a full convolution's work.
def _conv_geometry(ctx: dict[str, Any]) -> tuple:
    return ctx["stride"], ctx["padding"], ctx["dilation"], ctx["groups"]


def _conv_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """Also the bias's gradient where the convolution took one ("conv_bias"): g summed over
    the batch and the positions."""
    x, w, *bias = inputs
    stride, padding, dilation, groups = _conv_geometry(ctx)
    grads = (conv_transpose(g, w, stride, [b for b, _ in padding], dilation, groups,
                                       x.shape[2:]) if x.requires_grad else None,
             conv_weight(x, g, w.shape[2:], stride, padding, dilation, groups)
             if w.requires_grad else None)
    if not bias:
        return grads
    return grads + (g.sum((0, *range(2, g.ndim))) if bias[0].requires_grad else None,)


def _conv_transpose_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    x, w = inputs
    stride, padding, dilation, groups = _conv_geometry(ctx)
    return (conv(g, w, stride, padding, dilation, groups) if x.requires_grad
            else None,
            conv_weight(g, x, w.shape[2:], stride, padding, dilation, groups)
            if w.requires_grad else None)


def _conv_weight_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    x, gy = inputs
    stride, padding, dilation, groups = _conv_geometry(ctx)
    return (conv_transpose(gy, g, stride, [b for b, _ in padding], dilation, groups,
                                      x.shape[2:]) if x.requires_grad else None,
            conv(x, g, stride, padding, dilation, groups) if gy.requires_grad
            else None)


CONV = Capability(
    "conv", ("conv", "conv_transpose", "conv_weight"),
    """``conv(x, w, stride, padding, dilation, groups)``: x (N, C, *S), w (O, C/groups, *K),
    `padding` a (before, after) pair of zeros per spatial dim; returns (N, O, *out).
    ``conv_transpose(x, w, stride, padding, dilation, groups, size)``: the adjoint of conv
    in its input: x (N, O, *out) gives (N, C, *size), the full transposed convolution cut
    to `size` from offset `padding` (one int per dim), zero where `size` reaches past it.
    ``conv_weight(x, g, kernel, stride, padding, dilation, groups)``: the adjoint of conv in
    its weight: x (N, C, *S) and g (N, O, *out) give (O, C/groups, *kernel).""",
    "pyburn.nn.functional.conv2d",
    rules={"conv": _conv_rule, "conv_transpose": _conv_transpose_rule,
           "conv_weight": _conv_weight_rule},
    onnx={"conv": "Conv", "conv_transpose": "ConvTranspose"})

CONV_BIAS = Capability(
    "conv_bias", ("conv",),
    """(with "conv") ``conv`` takes a last argument ``bias``: a (O,) handle of x's dtype added
    to every output of its channel, or None. Each output is ``out + bias`` rounded to the
    dtype, the numbers of a separate add after the convolution; the backend adds it while
    the product is at hand instead of in a pass of its own over the output.""",
    "pyburn.nn.functional.conv2d")

CONV_ACTIVATION = Capability(
    "conv_activation", ("conv",),
    """(with "conv" and "conv_bias") ``conv`` takes a last argument ``activation``, after
    ``bias`` (which may then be None): None, ``("clip", lo,
    hi)`` (``min(max(out, lo), hi)`` with float bounds, either may be infinite: ReLU and
    ReLU6), or ``(name,)`` for a name of the "activation" capability (sigmoid, silu,
    hardsigmoid, hardswish), applied to each output after the bias: the numbers of the
    separate op (NaN kept). Inference only:
    the tensor layer never records such a call, so it has no backward rule.""",
    "pyburn.onnx (Conv followed by an activation, fused by the runner)")
