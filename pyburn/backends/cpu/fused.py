"""The cpu backend's "softmax", "layer_norm", "batch_norm", "batch_norm_eval", "nll_loss" and
"adam" capabilities: composites of the tensor layer as one numpy computation each (contracts:
``pyburn.ops.capability``).

Each runs the composite's own operations in the composite's order, with the numpy functions
the primitives use, so every value is the composite's bit for bit (a Python float meets an
array in the array's dtype, as the composite's constants do). What goes is the tensor
layer's and the autodiff graph's cost per primitive, a few µs each on rows of ten classes,
and in `adam` most of the composite's thirteen fresh arrays.
"""

from __future__ import annotations

import math

import numpy as np

from . import jit
from .extra_math import rsqrt
from .sums import sum_kept

Handle = np.ndarray


def softmax(x: Handle, axis: int, log: bool) -> Handle:
    """Softmax along `axis` (log_softmax when `log`): x shifted by its max where that is
    finite, then ``e / sum(e)`` with e its exp, or ``shifted - log(sum(exp(shifted)))``. An
    empty axis gives an empty result."""
    if not x.shape[axis]:
        return np.empty(x.shape, x.dtype)
    top = np.maximum.reduce(x, axis=axis, keepdims=True)
    shifted = np.subtract(x, np.where(np.isfinite(top), top, x.dtype.type(0)))
    if log:
        return np.subtract(shifted, np.log(sum_kept(np.exp(shifted), (axis,))))
    e = np.exp(shifted)
    return np.divide(e, sum_kept(e, (axis,)))


def _standardise(x: Handle, axes: tuple[int, ...], eps: float) -> tuple[Handle, Handle, Handle]:
    """``(x - mean) * rsqrt(var + eps)`` over `axes`, and the mean and biased variance (axes
    kept), as the composites compute them: the mean as sum / count, the variance as the mean
    of the squared deviations (a second pass, which a sum of squares would save only by
    giving up those bits and risking cancellation), float16 sums accumulated in float32. The
    deviations, which the composites compute twice, are computed once, and the result is
    written into their array."""
    count = math.prod(x.shape[d] for d in axes)
    mean = np.divide(sum_kept(x, axes), count)
    centred = np.subtract(x, mean)
    variance = np.divide(sum_kept(np.multiply(centred, centred), axes), count)
    scale = rsqrt(np.add(variance, eps)).astype(x.dtype, copy=False)
    return np.multiply(centred, scale, out=centred), mean, variance


def layer_norm(x: Handle, weight: Handle | None, bias: Handle | None, ndims: int,
               eps: float) -> Handle:
    """``(x - mean) * rsqrt(var + eps) * weight + bias`` over the trailing `ndims` dims, as
    the composite (``F.layer_norm``) computes it, scaled and shifted in place."""
    y, _, _ = _standardise(x, tuple(range(x.ndim - ndims, x.ndim)), eps)
    if weight is not None:
        np.multiply(y, weight, out=y)
    if bias is not None:
        np.add(y, bias, out=y)
    return y


def batch_norm(x: Handle, weight: Handle | None, bias: Handle | None,
               eps: float) -> tuple[Handle, Handle, Handle, Handle]:
    """x (N, C, ...) normalised over every dim but the channels, as the composite
    (``F.batch_norm`` in training) computes it, then scaled and shifted per channel into a
    new array: the normalised x stays whole for the backward pass. Returns the output, the
    normalised x (the output itself without weight and bias) and the mean and biased
    variance, (C,) each."""
    xhat, mean, variance = _standardise(x, (0,) + tuple(range(2, x.ndim)), eps)
    view = (-1,) + (1,) * (x.ndim - 2)
    y = xhat if weight is None else np.multiply(xhat, weight.reshape(view))
    if bias is not None:
        y = np.add(y, bias.reshape(view), out=None if y is xhat else y)
    return y, xhat, mean.reshape(-1), variance.reshape(-1)


def batch_norm_eval(x: Handle, mean: Handle, var: Handle, weight: Handle | None,
                    bias: Handle | None, eps: float) -> Handle:
    """x (N, C, ...) normalised with the given statistics (C,), as the composite
    (``F.batch_norm`` in evaluation) computes it: a scale and a shift per channel, then ``x
    * scale + shift`` in one pass into a new array, through numba's loop for contiguous
    float32 and float64 x (`jit.enabled`), else through numpy's product into the new array
    and the shift added in place."""
    scale = rsqrt(np.add(var, eps)).astype(x.dtype, copy=False)
    if weight is not None:
        scale = np.multiply(scale, weight)
    product = np.multiply(mean, scale)
    shift = np.negative(product) if bias is None else np.subtract(bias, product)
    if (x.dtype in (np.float32, np.float64) and x.flags.c_contiguous and x.size
            and jit.enabled()):
        from .numba_batch_norm import scale_shift  # optional: numba, the extra "jit"

        y = np.empty_like(x)
        rows = x.reshape(x.shape[0], x.shape[1], -1)
        scale_shift(rows, scale, shift, y.reshape(rows.shape))
        return y
    view = (-1,) + (1,) * (x.ndim - 2)
    y = np.multiply(x, scale.reshape(view))
    y += shift.reshape(view)
    return y


def _picking(target: Handle, axis: int, weight: Handle | None, ignore_index: int,
             dtype: np.dtype) -> tuple[Handle, Handle]:
    """The class each element picks (0 where ignored, as in the composite) with the class
    axis kept, and each element's weight (0 where ignored)."""
    ignored = target == ignore_index
    safe = np.where(ignored, target.dtype.type(0), target) if ignored.any() else target
    if weight is None:
        w = np.logical_not(ignored).astype(dtype)  # exactly the composite's 1.0 and 0.0
    else:
        w = np.where(ignored, weight.dtype.type(0), np.take(weight, safe))
    return np.expand_dims(safe, axis), w


def _first_bad(target: Handle, classes: int, ignore_index: int) -> int | None:
    """A target outside ``[0, classes)`` that is not `ignore_index`, or None."""
    if not target.size or (target.min() >= 0 and target.max() < classes):
        return None
    bad = (target != ignore_index) & ((target < 0) | (target >= classes))
    return int(target[bad].flat[0]) if bad.any() else None


def nll_loss(logp: Handle, target: Handle, axis: int, weight: Handle | None,
             ignore_index: int, reduction: str) -> tuple[Handle, int | None]:
    """``-w * logp[target]`` per element, summed or averaged by the weights (NaN where they
    sum to 0), and a bad target (the loss is then meaningless) or None."""
    bad = _first_bad(target, logp.shape[axis], ignore_index)
    if bad is not None:
        return np.empty((), logp.dtype), bad
    safe, w = _picking(target, axis, weight, ignore_index, logp.dtype)
    loss = np.multiply(np.negative(np.take_along_axis(logp, safe, axis).squeeze(axis)), w)
    if reduction == "none":
        return loss, None
    everything = tuple(range(loss.ndim))
    total = sum_kept(loss, everything).reshape(())
    if reduction == "sum":
        return total, None
    w_sum = sum_kept(w, everything).reshape(())
    return (np.divide(total, w_sum) if w_sum else np.full((), np.nan, logp.dtype)), None


def nll_loss_grad(g: Handle, target: Handle, axis: int, weight: Handle | None,
                  ignore_index: int, reduction: str, shape: tuple[int, ...]) -> Handle:
    """The gradient of `nll_loss` in logp for the output gradient g: zeros of `shape` with
    ``-(g * w)`` at each element's target (g divided by the weights' sum for "mean", and 0
    where that sum is 0)."""
    safe, w = _picking(target, axis, weight, ignore_index, g.dtype)
    if reduction == "mean":
        w_sum = sum_kept(w, tuple(range(w.ndim))).reshape(())
        g = np.divide(g, w_sum) if w_sum else np.zeros((), g.dtype)
    # 0 + v, as the composite's scatter_add into zeros does (it turns -0.0 into 0.0)
    picked = np.add(np.negative(np.multiply(g, w)), g.dtype.type(0))
    out = np.zeros(shape, g.dtype)
    np.put_along_axis(out, safe, np.expand_dims(picked, axis), axis)
    return out


def adam(p: Handle, g: Handle, m: Handle, v: Handle, v_max: Handle | None, beta1: float,
         beta2: float, step_size: float, bias2_sqrt: float,
         eps: float) -> tuple[Handle, Handle, Handle, Handle | None]:
    """One Adam step into three new arrays (four with v_max): the moments, and the new
    parameter's array, which holds each intermediate of the update in turn.

    The new arrays take the gradient's memory layout: a linear layer's weight gradient
    comes out transposed (the product for ``weight.mT``, permuted back), and elementwise
    passes that mix a transposed operand with row-major ones run 20x slower than aligned
    ones. After the first step the parameter and both moments share the gradient's layout.
    """
    def new() -> Handle:
        return np.empty_like(g, dtype=p.dtype)

    new_m = np.multiply(m, beta1, out=new())
    new_p = np.multiply(g, 1.0 - beta1, out=new())
    new_m += new_p
    new_v = np.multiply(v, beta2, out=new())
    np.multiply(g, g, out=new_p)
    new_p *= 1.0 - beta2
    new_v += new_p
    if v_max is not None:
        v_max = np.maximum(v_max, new_v, out=new())
    np.sqrt(new_v if v_max is None else v_max, out=new_p)
    new_p /= bias2_sqrt
    new_p += eps
    np.divide(new_m, new_p, out=new_p)
    new_p *= step_size
    return np.subtract(p, new_p, out=new_p), new_m, new_v, v_max
