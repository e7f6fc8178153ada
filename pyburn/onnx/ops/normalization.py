"""Normalizations: BatchNormalization, InstanceNormalization, LayerNormalization,
GroupNormalization (opset 18's per-group and opset 21's per-channel affine),
RMSNormalization, LpNormalization, LRN and MeanVarianceNormalization.

`stash_type` 1 (the default) computes the statistics in float32 even for float16 inputs,
as the spec asks; the result comes back in the input's dtype.
"""

from __future__ import annotations

from ... import Tensor, float16, float32, where
from ...nn.functional.windows import pad_spatial
from ...ops import capability
from ..registry import check, onnx_op


def _channel_view(t: Tensor, x: Tensor) -> Tensor:
    """A per-channel (C,) parameter shaped to broadcast over x (N, C, ...); a parameter
    already of shape (C, D1, ...) (BatchNormalization's old spatial=0) broadcasts as is."""
    if t.ndim == 1:
        return t.reshape((t.shape[0],) + (1,) * (x.ndim - 2))
    return t


def _stashed(x: Tensor, stash_type: int) -> Tensor:
    """x in the dtype its statistics are computed in."""
    return x.cast(float32) if stash_type == 1 and x.dtype is float16 else x


@onnx_op("BatchNormalization", since=1)
def batch_normalization(x: Tensor, scale: Tensor, b: Tensor, input_mean: Tensor,
                        input_var: Tensor, *, epsilon: float = 1e-5, momentum: float = 0.9,
                        training_mode: int = 0, is_test: int = 0, spatial: int = 1,
                        consumed_inputs: list[int] | None = None) -> Tensor | tuple:
    """BatchNormalization: ``scale * (x - mean) / sqrt(var + epsilon) + B`` per channel with
    the given mean and variance; with training_mode (opset 14), the batch's own mean and
    biased variance, returning also the running statistics
    ``input * momentum + batch * (1 - momentum)``. Before opset 14 it always runs as
    inference (the outputs of old training graphs other than Y are not produced). Inference
    is one call of the "batch_norm_eval" capability where the backend offers it (its numbers
    are ``rsqrt(var + epsilon) * scale``'s, which may differ from ``scale / sqrt(var +
    epsilon)``'s in the last place)."""
    del is_test, spatial, consumed_inputs  # inference semantics throughout
    if not training_mode:
        # one backend call where offered, for per-channel (C,) parameters and statistics
        # that require no grad; else one multiplier and one offset per channel, so that x
        # is read twice, not four times
        params = (scale, b, input_mean, input_var)
        if (x.ndim >= 2 and all(t.shape == x.shape[1:2] for t in params)
                and not (input_mean.requires_grad or input_var.requires_grad)
                and capability.offered(capability.BATCH_NORM_EVAL, x, *params)):
            return capability.batch_norm_eval(x, input_mean, input_var, scale, b, epsilon)
        factor = scale / (input_var + epsilon).sqrt()
        return x * _channel_view(factor, x) + _channel_view(b - input_mean * factor, x)
    dims = (0,) + tuple(range(2, x.ndim))
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, keepdim=True, correction=0)
    y = (x - mean) / (var + epsilon).sqrt() * _channel_view(scale, x) + _channel_view(b, x)
    running_mean = input_mean * momentum + mean.reshape(-1) * (1.0 - momentum)
    running_var = input_var * momentum + var.reshape(-1) * (1.0 - momentum)
    return y, running_mean, running_var


@onnx_op("InstanceNormalization", since=1)
def instance_normalization(x: Tensor, scale: Tensor, b: Tensor, *, epsilon: float = 1e-5,
                           consumed_inputs: list[int] | None = None) -> Tensor:
    """InstanceNormalization: each (sample, channel) normalized over its spatial dims, then
    ``* scale + B`` per channel (opset 1's consumed_inputs is accepted and ignored)."""
    del consumed_inputs
    dims = tuple(range(2, x.ndim))
    if dims:
        centered = x - x.mean(dims, keepdim=True)
        var = x.var(dims, keepdim=True, correction=0)
    else:  # no spatial dims: every instance is one value, its variance 0
        centered, var = x * 0.0, x * 0.0
    y = centered / (var + epsilon).sqrt()
    return y * _channel_view(scale, x) + _channel_view(b, x)


def _trailing_dims(x: Tensor, axis: int, op: str) -> tuple[int, ...]:
    check(-x.ndim <= axis < x.ndim, f"{op}: axis {axis} is out of range for input shape "
                                    f"{x.shape}")
    return tuple(range(axis % x.ndim, x.ndim))


@onnx_op("LayerNormalization", since=17)
def layer_normalization(x: Tensor, scale: Tensor, b: Tensor | None = None, *, axis: int = -1,
                        epsilon: float = 1e-5, stash_type: int = 1,
                        outputs_used: int = 3) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """LayerNormalization: x normalized over the dims from `axis` on, ``* Scale + B``;
    also returns Mean and InvStdDev (kept dims) in the stash type (only when the node uses
    them: Y alone is one backend call where the device offers "layer_norm")."""
    dims = _trailing_dims(x, axis, "LayerNormalization")
    affine = (scale,) if b is None else (scale, b)
    if (outputs_used < 2 and (stash_type == 0 or x.dtype is not float16)
            and all(t.shape == x.shape[dims[0]:] for t in affine)
            and capability.offered(capability.LAYER_NORM, x, *affine)):
        return capability.layer_norm(x, scale, b, len(dims), epsilon), None, None
    stats = _stashed(x, stash_type)
    mean = stats.mean(dims, keepdim=True)
    # the biased variance written out (what `var` computes), so that the centered values
    # serve both it and the result
    centered = stats - mean
    inv_std = ((centered * centered).mean(dims, keepdim=True) + epsilon).rsqrt()
    y = (centered * inv_std).cast(x.dtype) * scale
    if b is not None:
        y = y + b
    return y, mean, inv_std


@onnx_op("RMSNormalization", since=23)
def rms_normalization(x: Tensor, scale: Tensor, *, axis: int = -1, epsilon: float = 1e-5,
                      stash_type: int = 1) -> Tensor:
    """RMSNormalization: ``x / sqrt(mean(x^2) + epsilon) * scale`` over the dims from
    `axis` on."""
    dims = _trailing_dims(x, axis, "RMSNormalization")
    stats = _stashed(x, stash_type)
    y = stats * ((stats * stats).mean(dims, keepdim=True) + epsilon).rsqrt()
    return y.cast(x.dtype) * scale


def _group_normalized(x: Tensor, num_groups: int, epsilon: float, stash_type: int,
                      op: str) -> Tensor:
    n, c = x.shape[:2]
    check(num_groups > 0 and c % num_groups == 0,
          f"{op}: {c} channels (input shape {x.shape}) are not divisible into "
          f"num_groups={num_groups} groups")
    stats = _stashed(x, stash_type).reshape(n, num_groups, -1)
    mean = stats.mean(2, keepdim=True)
    inv_std = (stats.var(2, keepdim=True, correction=0) + epsilon).rsqrt()
    return ((stats - mean) * inv_std).reshape(x.shape).cast(x.dtype)


@onnx_op("GroupNormalization", since=18)
def group_normalization_18(x: Tensor, scale: Tensor, bias: Tensor, *, epsilon: float = 1e-5,
                           num_groups: int = 0, stash_type: int = 1) -> Tensor:
    """GroupNormalization (opset 18): normalized per sample and group of channels, with
    `scale` and `bias` given per group (num_groups,)."""
    y = _group_normalized(x, num_groups, epsilon, stash_type, "GroupNormalization")
    n, c = x.shape[:2]
    shape = (n, num_groups, c // num_groups) + x.shape[2:]
    view = (num_groups,) + (1,) * (len(shape) - 2)
    return (y.reshape(shape) * scale.reshape(view) + bias.reshape(view)).reshape(x.shape)


@onnx_op("GroupNormalization", since=21)
def group_normalization(x: Tensor, scale: Tensor, bias: Tensor, *, epsilon: float = 1e-5,
                        num_groups: int = 0, stash_type: int = 1) -> Tensor:
    """GroupNormalization (opset 21): normalized per sample and group of channels, with
    `scale` and `bias` given per channel (C,)."""
    y = _group_normalized(x, num_groups, epsilon, stash_type, "GroupNormalization")
    return y * _channel_view(scale, x) + _channel_view(bias, x)


@onnx_op("LpNormalization", since=1)
def lp_normalization(x: Tensor, *, axis: int = -1, p: int = 2) -> Tensor:
    """LpNormalization: x divided by its L1 or L2 norm along `axis` (0 where the norm is
    0)."""
    check(p in (1, 2), f"LpNormalization: p must be 1 or 2, got {p}")
    norm = x.abs().sum(axis, keepdim=True) if p == 1 else (x * x).sum(axis, keepdim=True).sqrt()
    return where(norm == 0, 0.0, x / where(norm == 0, 1.0, norm)).cast(x.dtype)


@onnx_op("LRN", since=1)
def lrn(x: Tensor, *, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0,
        size: int = 0) -> Tensor:
    """LRN: ``x / (bias + alpha / size * sum of x^2 over the size channels around)^beta``;
    the window spans floor((size - 1) / 2) channels before and ceil((size - 1) / 2)
    after."""
    check(size > 0, f"LRN: size must be positive, got {size}")
    check(x.ndim >= 3, f"LRN: input must be (N, C, D1, ...), got shape {x.shape}")
    before = (size - 1) // 2
    channels = x.shape[1]
    squares = (x * x).movedim(1, -1)
    padded = pad_spatial(squares, [(before, size - 1 - before)])
    total = None
    for k in range(size):
        piece = padded.narrow(-1, k, channels)
        total = piece if total is None else total + piece
    return x / (bias + (alpha / size) * total.movedim(-1, 1)) ** beta


@onnx_op("MeanVarianceNormalization", since=9)
def mean_variance_normalization(x: Tensor, *, axes: list[int] | None = None) -> Tensor:
    """MeanVarianceNormalization: ``(x - mean) / (sqrt(variance) + 1e-9)`` over `axes`
    (default 0, 2, 3)."""
    dims = tuple(a % x.ndim for a in (axes if axes is not None else [0, 2, 3]))
    centered = x - x.mean(dims, keepdim=True)
    std = x.var(dims, keepdim=True, correction=0).sqrt()
    return centered / (std + 1e-9)
