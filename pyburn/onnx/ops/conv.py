"""Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv and
CausalConvWithState.

Each resolves ONNX's window attributes (`spatial.geometry`) and then convolves: where the
device offers the "conv" capability (and the dtypes are one float type), Conv calls it
directly (with the bias where it offers "conv_bias"), since the geometry is already checked
and the capability takes ONNX's (before, after) pads as they are; otherwise it calls
`pyburn.nn.functional`'s convolution, whose padding is symmetric, so the symmetric part of
ONNX's (possibly asymmetric) pads goes to F and only the remainder is padded here. In the
runner (which gives each step a memo) Conv and pyburn's FusedConv make those checks and
choices once per input shape (`planned`): a small network's convolutions are a few
microseconds of work each, and the checks cost as much again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import Tensor, arange, cat, zeros
from ...dtypes import int32, uint8
from ...errors import ArgumentError, ShapeError
from ...nn import functional as F
from ...nn.functional.grid import sample
from ...nn.functional.windows import pad_spatial
from ...ops import capability
from ...quant import kernels as quant_kernels
from ..registry import check, onnx_op
from .quantize import requantize, zero_point_range
from .spatial import Geometry, geometry, per_dim, same_pads

_CONV: dict[int, Callable[..., Tensor]] = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T: dict[int, Callable[..., Tensor]] = {
    1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _spatial_rank(x: Tensor, w: Tensor, op: str) -> int:
    nd = x.ndim - 2
    check(nd in _CONV, f"{op}: input must be (N, C, D1[, D2[, D3]]) with 1 to 3 spatial dims, "
                       f"got shape {x.shape}")
    check(w.ndim == x.ndim, f"{op}: weight shape {w.shape} must have the rank of input shape "
                            f"{x.shape}")
    return nd


def _add_channel_bias(y: Tensor, b: Tensor | None) -> Tensor:
    return y if b is None else y + b.reshape((b.numel(),) + (1,) * (y.ndim - 2))


def _conv(x: Tensor, w: Tensor, b: Tensor | None, auto_pad: str, dilations: Sequence[int] | None,
          group: int, pads: Sequence[int] | None, strides: Sequence[int] | None,
          op: str) -> Tensor:
    return _run(x, w, b, None, group, _plan(x, w, b, None, auto_pad, dilations, group, pads,
                                            strides, op))


def _check_channels(x: Tensor, w: Tensor, b: Tensor | None, group: int, op: str) -> None:
    """What F's convolution checks before it calls the capability: channels and groups."""
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise ArgumentError(f"{op}: group must be a positive int, got {group!r}")
    if x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise ShapeError(f"{op}: input shape {x.shape} and weight shape {w.shape} do not fit "
                         f"group={group} (input channels = weight dim 1 * group, weight dim 0 "
                         f"divisible by group)")
    if b is not None and b.shape != (w.shape[0],):
        raise ShapeError(f"{op}: bias must have shape ({w.shape[0]},), got {b.shape}")


@onnx_op("Conv", since=1)
def conv(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
         dilations: list[int] | None = None, group: int = 1,
         kernel_shape: list[int] | None = None, pads: list[int] | None = None,
         strides: list[int] | None = None, memo: dict[str, Any] | None = None) -> Tensor:
    """Conv: cross-correlation of x (N, C, *S) with w (M, C/group, *K), 1 to 3 spatial
    dims; kernel_shape, when given, must match w. With the runner's `memo`, the checks run
    once per input shape (`planned`)."""
    _check_kernel(kernel_shape, w, "Conv")
    if memo is None:
        return _conv(x, w, b, auto_pad, dilations, group, pads, strides, "Conv")
    return planned(x, w, b, None, auto_pad, dilations, group, pads, strides, memo, "Conv")


def planned(x: Tensor, w: Tensor, b: Tensor | None, spec: tuple | None, auto_pad: str,
            dilations: list[int] | None, group: int, pads: list[int] | None,
            strides: list[int] | None, memo: dict[str, Any], op: str) -> Tensor:
    """The convolution of `_conv` followed by the activation `spec` (``("clip", lo, hi)``,
    ``(name,)`` of `pyburn.nn.functional`, or None), with what the checks and capabilities
    decide for these shapes, dtypes and device (`_plan`) kept in `memo`: one backend call,
    the activation in it where the device offers "conv_activation"."""
    key = (x.shape, w.shape, x.dtype, w.dtype, x.device, b is None or (b.shape, b.dtype))
    plan = memo.get("plan")
    if plan is None or plan[0] != key:
        plan = memo["plan"] = (key, _plan(x, w, b, spec, auto_pad, dilations, group, pads,
                                          strides, op))
    return _run(x, w, b, spec, group, plan[1])


#: how `_run` convolves: the backend's convolution with the bias and the activation, with
#: the bias alone (the activation after it), without the bias (added after), or
#: `pyburn.nn.functional`'s composite
ACTIVATED, BIASED, UNBIASED, COMPOSITE = range(4)


def _plan(x: Tensor, w: Tensor, b: Tensor | None, spec: tuple | None, auto_pad: str,
          dilations: Sequence[int] | None, group: int, pads: Sequence[int] | None,
          strides: Sequence[int] | None, op: str) -> tuple[Geometry, int]:
    """How tensors like these are convolved (and then given the activation `spec`): the
    checked geometry and the way (`ACTIVATED`, ...) the device's capabilities allow."""
    _spatial_rank(x, w, op)
    found = geometry(op, x.shape[2:], w.shape[2:], strides, dilations, pads, auto_pad)
    fits = [x, w] + ([] if b is None else [b])
    if not capability.offered(capability.CONV, *fits):
        return found, COMPOSITE
    _check_channels(x, w, b, group, op)
    if b is not None and not capability.offered(capability.CONV_BIAS, *fits):
        return found, UNBIASED
    together = spec is not None and capability.offered(capability.CONV_ACTIVATION, *fits)
    return found, ACTIVATED if together else BIASED


def _run(x: Tensor, w: Tensor, b: Tensor | None, spec: tuple | None, group: int,
         plan: tuple[Geometry, int]) -> Tensor:
    """The convolution of x with w (and b) the way `plan` says, then the activation `spec`
    where the backend did not write it."""
    g, way = plan
    if way == ACTIVATED:
        return capability.conv(x, w, g.strides, g.pads, g.dilations, group, b, spec)
    if way == BIASED:
        y = capability.conv(x, w, g.strides, g.pads, g.dilations, group, b)
    elif way == UNBIASED:
        y = _add_channel_bias(capability.conv(x, w, g.strides, g.pads, g.dilations, group), b)
    else:  # F's padding is symmetric: the rest of ONNX's pads is padded here
        sym = [max(0, min(before, after)) for before, after in g.pads]
        x = pad_spatial(x, [(before - p, after - p) for p, (before, after) in zip(sym, g.pads)])
        y = _CONV[x.ndim - 2](x, w, b, stride=g.strides, padding=tuple(sym),
                              dilation=g.dilations, groups=group)
    return y if spec is None else activate(y, spec)


def activate(y: Tensor, spec: tuple) -> Tensor:
    """The activation `spec` (``("clip", lo, hi)`` or ``(name,)``) of y, as its own op."""
    name, *bounds = spec
    if name == "clip":
        return y.clamp(*bounds)
    function: Callable[[Tensor], Tensor] = getattr(F, name)
    return function(y)


def _check_kernel(kernel_shape: list[int] | None, w: Tensor, op: str) -> None:
    check(not kernel_shape or tuple(kernel_shape) == w.shape[2:],
          f"{op}: kernel_shape {kernel_shape} does not match weight shape {w.shape}")


@onnx_op("ConvTranspose", since=1)
def conv_transpose(x: Tensor, w: Tensor, b: Tensor | None = None, *, auto_pad: str = "NOTSET",
                   dilations: list[int] | None = None, group: int = 1,
                   kernel_shape: list[int] | None = None,
                   output_padding: list[int] | None = None,
                   output_shape: list[int] | None = None, pads: list[int] | None = None,
                   strides: list[int] | None = None) -> Tensor:
    """ConvTranspose: the transposed convolution of x (N, C, *S) with w (C, M/group, *K).

    `output_shape` (spatial sizes) or SAME_* auto_pad fixes the output size and the pads
    follow from it (SAME_UPPER puts the odd pad at the end, otherwise at the beginning); an
    output larger than the full result is zero-extended at the end, as in `output_padding`.
    """
    op = "ConvTranspose"
    nd = _spatial_rank(x, w, op)
    _check_kernel(kernel_shape, w, op)
    spatial, kernel = x.shape[2:], w.shape[2:]
    stride = per_dim(strides, nd, 1, "strides", op)
    dilation = per_dim(dilations, nd, 1, "dilations", op)
    extra = per_dim(output_padding, nd, 0, "output_padding", op)
    full = [(n - 1) * s + d * (k - 1) + 1 + e
            for n, s, d, k, e in zip(spatial, stride, dilation, kernel, extra)]
    if output_shape or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # some exporters write the whole output shape, not only its spatial part
        sizes = list(output_shape)[-nd:] if output_shape else [n * s for n, s in
                                                                zip(spatial, stride)]
        pairs = [same_pads(f - o, auto_pad) for f, o in zip(full, sizes)]
    elif auto_pad == "VALID" or not pads:
        pairs = [(0, 0)] * nd
    else:
        check(len(pads) == 2 * nd, f"{op}: pads must have {2 * nd} values, got {pads}")
        pairs = [(pads[i], pads[nd + i]) for i in range(nd)]
    # the symmetric part of the cut and output_padding go to F (its output_padding rows
    # come from what the cut removes at the end, as in ONNX); the rest is cut or
    # zero-extended here
    sym = [max(0, min(before, after)) for before, after in pairs]
    y = _CONV_T[nd](x, w, None, stride=stride, padding=tuple(sym), groups=group,
                    dilation=dilation, output_padding=tuple(extra))
    y = pad_spatial(y, [(p - before, p - after) for p, (before, after) in zip(sym, pairs)])
    check(all(n > 0 for n in y.shape[2:]),
          f"{op}: pads {pairs} leave an empty output for input shape {x.shape}")
    return _add_channel_bias(y, b)


def _centered(t: Tensor, zero_point: Tensor | None, channel_dim: int = 0) -> Tensor:
    """An integer tensor minus its zero point (scalar, or one per channel along
    `channel_dim`), as int32."""
    t = t.int()
    if zero_point is None:
        return t
    if zero_point.numel() == 1:
        return t - zero_point.reshape(()).int()
    shape = [1] * t.ndim
    shape[channel_dim] = zero_point.numel()
    return t - zero_point.int().reshape(tuple(shape))


@onnx_op("ConvInteger", since=10)
def conv_integer(x: Tensor, w: Tensor, x_zero_point: Tensor | None = None,
                 w_zero_point: Tensor | None = None, *, auto_pad: str = "NOTSET",
                 dilations: list[int] | None = None, group: int = 1,
                 kernel_shape: list[int] | None = None, pads: list[int] | None = None,
                 strides: list[int] | None = None,
                 memo: dict[str, Any] | None = None) -> Tensor:
    """ConvInteger: Conv of (x - x_zero_point) and (w - w_zero_point) in int32; the padding
    is the zero point (a zero after centering)."""
    _check_kernel(kernel_shape, w, "ConvInteger")
    return _integer_conv(x, x_zero_point, w, w_zero_point, auto_pad, dilations, group, pads,
                         strides, "ConvInteger", memo)


def _integer_conv(x: Tensor, x_zero_point: Tensor | None, w: Tensor,
                  w_zero_point: Tensor | None, auto_pad: str, dilations: Sequence[int] | None,
                  group: int, pads: Sequence[int] | None, strides: Sequence[int] | None,
                  op: str, memo: dict[str, Any] | None) -> Tensor:
    """The exact int32 convolution of the centered inputs. With 1 or 2 spatial dims, an
    8-bit weight and per-tensor x zero point it runs on `pyburn.quant.kernels.conv_integer`
    (the weight packed once while the node's `memo` holds it, the device's integer kernel;
    a 1-d convolution as a 2-d one of height 1; ONNX's int8 is held in int32, uint8 in
    uint8); otherwise as a convolution of int32 tensors."""
    nd = _spatial_rank(x, w, op)
    if nd > 2 or w.dtype not in (int32, uint8) or \
            (x_zero_point is not None and x_zero_point.numel() != 1):
        return _conv(_centered(x, x_zero_point), _centered(w, w_zero_point), None, auto_pad,
                     dilations, group, pads, strides, op)
    g = geometry(op, x.shape[2:], w.shape[2:], strides, dilations, pads, auto_pad)
    _check_channels(x, w, None, group, op)
    if nd == 1:  # as a 2-d convolution of height 1
        acc = quant_kernels.conv_integer(
            x.unsqueeze(2), x_zero_point, w.unsqueeze(2), w_zero_point,
            signed=w.dtype is not uint8, stride=(1, g.strides[0]), pads=((0, 0), g.pads[0]),
            dilation=(1, g.dilations[0]), groups=group)
        return acc.squeeze(2)
    return quant_kernels.conv_integer(x, x_zero_point, w, w_zero_point, signed=w.dtype is not uint8,
                                      stride=g.strides, pads=g.pads, dilation=g.dilations,
                                      groups=group, memo=memo)


@onnx_op("QLinearConv", since=10)
def qlinear_conv(x: Tensor, x_scale: Tensor, x_zero_point: Tensor, w: Tensor, w_scale: Tensor,
                 w_zero_point: Tensor, y_scale: Tensor, y_zero_point: Tensor | None = None,
                 b: Tensor | None = None, *, auto_pad: str = "NOTSET",
                 dilations: list[int] | None = None, group: int = 1,
                 kernel_shape: list[int] | None = None, pads: list[int] | None = None,
                 strides: list[int] | None = None,
                 memo: dict[str, Any] | None = None) -> Tensor:
    """QLinearConv: the integer convolution of the centered inputs plus the int32 bias,
    rescaled by x_scale * w_scale / y_scale (w_scale per output channel or scalar), rounded
    half to even, shifted by y_zero_point and saturated to its type."""
    _check_kernel(kernel_shape, w, "QLinearConv")
    acc = _add_channel_bias(_integer_conv(x, x_zero_point, w, w_zero_point, auto_pad,
                                          dilations, group, pads, strides, "QLinearConv",
                                          memo), b)
    scale = x_scale.reshape(()) * w_scale.reshape((w_scale.numel(),) + (1,) * (acc.ndim - 2))
    low, high, dtype = zero_point_range(y_zero_point, x)
    return requantize(acc, scale / y_scale.reshape(()), y_zero_point, low, high, dtype)


@onnx_op("DeformConv", since=19)
def deform_conv(x: Tensor, w: Tensor, offset: Tensor, b: Tensor | None = None,
                mask: Tensor | None = None, *, dilations: list[int] | None = None,
                group: int = 1, kernel_shape: list[int] | None = None, offset_group: int = 1,
                pads: list[int] | None = None, strides: list[int] | None = None) -> Tensor:
    """DeformConv: a convolution whose kernel taps sample x bilinearly (zero outside) at
    their regular position plus a learned offset, each sample weighted by `mask`.

    offset is (N, offset_group * nd * K, *out) with the nd coordinates of each kernel tap
    adjacent (K taps in row-major order); mask is (N, offset_group * K, *out).
    """
    op = "DeformConv"
    nd = _spatial_rank(x, w, op)
    _check_kernel(kernel_shape, w, op)
    g = geometry(op, x.shape[2:], w.shape[2:], strides, dilations, pads)
    n, c = x.shape[:2]
    check(offset_group > 0 and c % offset_group == 0,
          f"{op}: {c} channels are not divisible into offset_group={offset_group} groups")
    k = 1
    for size in g.kernel:
        k *= size
    positions = 1
    for size in g.out:
        positions *= size
    check(offset.shape == (n, offset_group * nd * k) + g.out,
          f"{op}: offset shape {offset.shape} must be {(n, offset_group * nd * k) + g.out}")
    # each tap samples at its regular position plus the learned offset, bilinearly
    offsets = offset.reshape(n * offset_group, k, nd, positions)
    coords = [(offsets[:, :, dim] + _tap_grid(g, dim, offset).reshape(1, k, positions))
              .reshape(n * offset_group, k * positions) for dim in range(nd)]
    grouped = x.reshape((n * offset_group, c // offset_group) + x.shape[2:])
    cols = sample(grouped, coords, "linear", "zeros", 1)
    cols = cols.reshape(n, offset_group, c // offset_group, k, positions)
    if mask is not None:
        cols = cols * mask.reshape(n, offset_group, 1, k, positions)
    m = w.shape[0]
    cols = cols.reshape(n, group, (c // group) * k, positions)
    y = (w.reshape(group, m // group, (c // group) * k) @ cols).reshape((n, m) + g.out)
    return _add_channel_bias(y, b)


def _tap_grid(g: Geometry, dim: int, like: Tensor) -> Tensor:
    """For every kernel tap and output position (both row-major), the input coordinate of
    that tap along spatial dim `dim` before any learned offset, in `like`'s dtype."""
    nd = len(g.kernel)
    tap = arange(g.kernel[dim], device=like.device).cast(like.dtype) * g.dilations[dim]
    at = arange(g.out[dim], device=like.device).cast(like.dtype) * g.strides[dim] - g.pads[dim][0]
    tap_shape, out_shape = [1] * (2 * nd), [1] * (2 * nd)
    tap_shape[dim] = g.kernel[dim]
    out_shape[nd + dim] = g.out[dim]
    grid = tap.reshape(tuple(tap_shape)) + at.reshape(tuple(out_shape))
    return grid.expand(tuple(g.kernel) + tuple(g.out))


@onnx_op("CausalConvWithState", since=27)
def causal_conv_with_state(x: Tensor, w: Tensor, b: Tensor | None = None,
                           past_state: Tensor | None = None, *,
                           activation: str = "none") -> tuple[Tensor, Tensor]:
    """CausalConvWithState: the depthwise 1-d convolution of x (B, C, L) with w (C, 1, k)
    over past_state (B, C, k - 1; zeros when absent) followed by x, optionally with SiLU
    (silu/swish): (output (B, C, L), present_state, the last k - 1 positions of that
    sequence)."""
    op = "CausalConvWithState"
    check(activation in ("none", "silu", "swish"),
          f"{op}: activation must be none, silu or swish, got {activation!r}")
    check(x.ndim == 3 and w.ndim == 3 and w.shape[:2] == (x.shape[1], 1),
          f"{op}: input {x.shape} must be (B, C, L) and weight {w.shape} (C, 1, k)")
    batch, channels, _ = x.shape
    k = w.shape[2]
    if past_state is None:
        past_state = zeros(batch, channels, k - 1, dtype=x.dtype, device=x.device)
    sequence = cat([past_state, x], 2)
    y = F.conv1d(sequence, w, b, groups=channels)
    if activation != "none":
        y = F.silu(y)
    return y, sequence[:, :, sequence.shape[2] - (k - 1):]
