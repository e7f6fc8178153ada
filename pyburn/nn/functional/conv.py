"""Linear maps and convolutions: linear, bilinear, conv1d/2d/3d, conv_transpose1d/2d/3d.

A convolution is im2col plus one matmul: `windows` stacks the strided slices of the padded
input that each kernel offset sees (``(N, C, K, *out)``, K = kernel elements), and a batched
matmul over the groups contracts them with the weight. A transposed convolution is the
adjoint: the matmul with the weight's transpose gives one column per input position, and
`place_windows` (col2im) adds the columns back into the output image. Where the backend
offers the "conv" capability (`capability.offered`), each is one backend call instead (the
bias included where it also offers "conv_bias"), and `linear` likewise where it offers
"linear".
"""

from __future__ import annotations

from typing import Any

from ... import ArgumentError, ShapeError, Tensor
from ...ops import capability
from ...ops.capability import CONV, CONV_BIAS, LINEAR, offered
from ...precision import autocast_inputs
from .windows import (
    Ints,
    check_min_rank,
    check_rank,
    ntuple,
    pad_spatial,
    place_windows,
    windowed_sizes,
    windows,
)


def _numel(shape: Ints) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``: weight is (out_features, in_features) (or 1-d, giving
    one output without that dim); input is (..., in_features). One backend call where the
    backend offers the "linear" capability (a 2-d weight and a bias of (out_features,) or
    none), else a matmul and an add.

    >>> import pyburn, pyburn.nn.functional as F
    >>> x, w = pyburn.ones(2, 3, device="flex"), pyburn.ones(4, 3, device="flex")
    >>> F.linear(x, w).shape
    (2, 4)
    """
    check_min_rank(input, 1, "linear", "..., in_features")
    if not isinstance(weight, Tensor) or weight.ndim not in (1, 2):
        raise ShapeError(f"linear: weight must be 1-d or 2-d (out_features, in_features), got "
                         f"{getattr(weight, 'shape', weight)}")
    if input.shape[-1] != weight.shape[-1]:
        raise ShapeError(f"linear: input shape {input.shape} does not fit weight shape "
                         f"{weight.shape} (in_features {input.shape[-1]} vs "
                         f"{weight.shape[-1]})")
    input, weight, bias = autocast_inputs("linear", input, weight, bias)
    if weight.ndim == 2 and (bias is None or (isinstance(bias, Tensor)
                                              and bias.shape == weight.shape[:1])) \
            and offered(LINEAR, input, weight, *(() if bias is None else (bias,))):
        return capability.linear(input, weight, bias)
    out = input @ (weight.mT if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y[..., k] = input1 @ weight[k] @ input2 + bias[k]``: weight is (out, in1, in2),
    input1 is (..., in1) and input2 (..., in2) with the same leading dims."""
    check_min_rank(input1, 1, "bilinear", "..., in1_features")
    check_rank(input2, (input1.ndim,), "bilinear", "the rank of input1")
    if not isinstance(weight, Tensor) or weight.ndim != 3:
        raise ShapeError(f"bilinear: weight must be 3-d (out, in1, in2), got "
                         f"{getattr(weight, 'shape', weight)}")
    out_f, in1, in2 = weight.shape
    if (input1.shape[-1], input2.shape[-1]) != (in1, in2) or input1.shape[:-1] != \
            input2.shape[:-1]:
        raise ShapeError(f"bilinear: inputs of shapes {input1.shape} and {input2.shape} do not "
                         f"fit weight shape {weight.shape}")
    lead = input1.shape[:-1]
    rows = _numel(lead)
    # one matmul with the weight laid out as (in1, out * in2), then a product with input2
    # summed over in2: no per-output-feature loop
    left = input1.reshape(rows, in1) @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    y = (left.reshape(rows, out_f, in2) * input2.reshape(rows, 1, in2)).sum(-1)
    y = y.reshape(lead + (out_f,))
    return y if bias is None else y + bias


def _conv_padding(padding: Any, kernel: Ints, stride: Ints, dilation: Ints,
                  op: str) -> list[tuple[int, int]]:
    """(before, after) zero padding per spatial dim from an int, ints, "valid" or "same"."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ArgumentError(f"{op}: padding='same' needs stride 1, got stride {stride}")
            # PyTorch puts the odd element of an odd total on the right
            totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return [(t // 2, t - t // 2) for t in totals]
        raise ArgumentError(f"{op}: padding is an int, {nd} ints, 'valid' or 'same', got "
                            f"{padding!r}")
    return [(p, p) for p in ntuple(padding, nd, "padding", op, 0)]


def _check_weight(weight: Any, nd: int, op: str) -> None:
    if not isinstance(weight, Tensor) or weight.ndim != nd + 2:
        raise ShapeError(f"{op}: weight must be {nd + 2}-d, got shape "
                         f"{getattr(weight, 'shape', weight)}")


def _check_groups(groups: Any, op: str) -> int:
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ArgumentError(f"{op}: groups must be a positive int, got {groups!r}")
    return groups


def _check_bias(bias: Any, channels: int, op: str) -> None:
    if bias is not None and (not isinstance(bias, Tensor) or bias.shape != (channels,)):
        raise ShapeError(f"{op}: bias must have shape ({channels},), got "
                         f"{getattr(bias, 'shape', bias)}")


def _add_bias(y: Tensor, bias: Tensor | None, channels: int, nd: int, op: str) -> Tensor:
    _check_bias(bias, channels, op)
    return y if bias is None else y + bias.reshape((channels,) + (1,) * nd)


def _conv(op: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None,
          stride: Any, padding: Any, dilation: Any, groups: Any) -> Tensor:
    layout = "N, C, " + ", ".join("DHW"[3 - nd:])
    check_rank(input, (nd + 1, nd + 2), op, layout)
    _check_weight(weight, nd, op)
    groups = _check_groups(groups, op)
    stride = ntuple(stride, nd, "stride", op, 1)
    dilation = ntuple(dilation, nd, "dilation", op, 1)
    input, weight, bias = autocast_inputs(op, input, weight, bias)
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[:2]
    out_c, group_c = weight.shape[:2]
    kernel = weight.shape[2:]
    if c != group_c * groups:
        raise ShapeError(f"{op}: input shape {input.shape} has {c} channels, but weight shape "
                         f"{weight.shape} with groups={groups} expects {group_c * groups}")
    if out_c % groups:
        raise ShapeError(f"{op}: weight shape {weight.shape} has {out_c} output channels, not "
                         f"divisible by groups={groups}")
    pads = _conv_padding(padding, kernel, stride, dilation, op)
    out = windowed_sizes(x, kernel, stride, dilation, pads, op)
    _check_bias(bias, out_c, op)
    if bias is not None and offered(CONV_BIAS, x, weight, bias):
        y = capability.conv(x, weight, stride, pads, dilation, groups, bias)
        return y if batched else y.squeeze(0)
    if offered(CONV, x, weight):
        y = capability.conv(x, weight, stride, pads, dilation, groups)
    else:
        k = _numel(kernel)
        cols = windows(pad_spatial(x, pads), kernel, stride, dilation, out)
        cols = cols.reshape(n, groups, group_c * k, _numel(out))
        w = weight.reshape(groups, out_c // groups, group_c * k)
        y = (w @ cols).reshape((n, out_c) + out)
    y = _add_bias(y, bias, out_c, nd, op)
    return y if batched else y.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation, as in PyTorch) of input (N, C_in, L) or
    (C_in, L) with weight (C_out, C_in / groups, k). `padding` is an int, "valid" or
    "same" (stride 1; an odd total puts the extra zero on the right); use `pad` first for
    other asymmetric or non-zero padding."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d convolution of input (N, C_in, H, W) or (C_in, H, W) with weight
    (C_out, C_in / groups, kH, kW); stride, padding and dilation are ints or pairs;
    padding may also be "valid" or "same".

    >>> import pyburn, pyburn.nn.functional as F
    >>> x, w = pyburn.ones(1, 1, 4, 4, device="flex"), pyburn.ones(2, 1, 3, 3, device="flex")
    >>> F.conv2d(x, w, padding=1)[0, 0].tolist()[0]
    [4.0, 6.0, 6.0, 4.0]
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
           stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-d convolution of input (N, C_in, D, H, W) or (C_in, D, H, W) with weight
    (C_out, C_in / groups, kD, kH, kW)."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op: str, nd: int, input: Tensor, weight: Tensor,
                    bias: Tensor | None, stride: Any, padding: Any, output_padding: Any,
                    groups: Any, dilation: Any) -> Tensor:
    layout = "N, C, " + ", ".join("DHW"[3 - nd:])
    check_rank(input, (nd + 1, nd + 2), op, layout)
    _check_weight(weight, nd, op)
    groups = _check_groups(groups, op)
    stride = ntuple(stride, nd, "stride", op, 1)
    dilation = ntuple(dilation, nd, "dilation", op, 1)
    if isinstance(padding, str):
        raise ArgumentError(f"{op}: padding must be an int or {nd} ints, got {padding!r}")
    pads = ntuple(padding, nd, "padding", op, 0)
    extra = ntuple(output_padding, nd, "output_padding", op, 0)
    input, weight, bias = autocast_inputs(op, input, weight, bias)
    for e, s, d in zip(extra, stride, dilation):
        if e >= s and e >= d:
            raise ArgumentError(f"{op}: output_padding {extra} must be smaller than the stride "
                                f"{stride} or the dilation {dilation}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[:2]
    in_c, group_out = weight.shape[:2]
    kernel = weight.shape[2:]
    if c != in_c:
        raise ShapeError(f"{op}: input shape {input.shape} has {c} channels, but weight shape "
                         f"{weight.shape} expects {in_c}")
    if c % groups:
        raise ShapeError(f"{op}: {c} input channels (input shape {input.shape}) are not "
                         f"divisible by groups={groups}")
    spatial = x.shape[2:]
    full = tuple((m - 1) * s + d * (k - 1) + 1 + e
                 for m, s, d, k, e in zip(spatial, stride, dilation, kernel, extra))
    out = tuple(f - 2 * p for f, p in zip(full, pads))
    if any(o <= 0 for o in out) or any(m == 0 for m in spatial):
        raise ShapeError(f"{op}: input shape {input.shape} with weight shape {weight.shape}, "
                         f"stride {stride}, padding {pads} and dilation {dilation} gives an "
                         f"empty output {out}")
    out_c = group_out * groups
    if offered(CONV, x, weight):
        y = capability.conv_transpose(x, weight, stride, pads, dilation, groups, out)
    else:
        k = _numel(kernel)
        w = weight.reshape(groups, c // groups, group_out * k).mT
        cols = w @ x.reshape(n, groups, c // groups, _numel(spatial))
        y = place_windows(cols.reshape((n, out_c, k) + spatial), kernel, stride, dilation, full)
        y = y[(Ellipsis, *(slice(p, p + o) for p, o in zip(pads, out)))]
    y = _add_bias(y, bias, out_c, nd, op)
    return y if batched else y.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 1-d convolution (the gradient of conv1d with respect to its input) of input
    (N, C_in, L) with weight (C_in, C_out / groups, k). Output length is
    ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 2-d convolution of input (N, C_in, H, W) with weight
    (C_in, C_out / groups, kH, kW); see `conv_transpose1d` for the output size."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 3-d convolution of input (N, C_in, D, H, W) with weight
    (C_in, C_out / groups, kD, kH, kW); see `conv_transpose1d` for the output size."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
