"""Optional capabilities: convolution, max and average pooling, softmax, layer and batch
normalisation, the linear map, the negative log-likelihood loss and the Adam update as one
backend call where the backend offers them, with the composites in conv.py, pooling.py,
activation.py, normalization.py, loss.py and ``pyburn/optim/adam.py`` as the fallback.

A backend that lists a capability in its ``caps`` implements its methods (the cpu backend:
``pyburn/backends/cpu/conv.py``, ``fused.py`` and its own ``linear``):

``"conv"``
    ``conv(x, w, stride, padding, dilation, groups)``: x (N, C, *S), w (O, C/groups, *K),
    `padding` a (before, after) pair of zeros per spatial dim; returns (N, O, *out).
    ``conv_transpose(x, w, stride, padding, dilation, groups, size)``: the adjoint of conv
    in its input: x (N, O, *out) gives (N, C, *size), the full transposed convolution cut
    to `size` from offset `padding` (one int per dim), zero where `size` reaches past it.
    ``conv_weight(x, g, kernel, stride, padding, dilation, groups)``: the adjoint of conv in
    its weight: x (N, C, *S) and g (N, O, *out) give (O, C/groups, *kernel).
``"conv_bias"``
    (with "conv") ``conv`` takes a last argument ``bias``: a (O,) handle of x's dtype added
    to every output of its channel, or None. Each output is ``out + bias`` rounded to the
    dtype, the numbers of a separate add after the convolution; the backend adds it while
    the product is at hand instead of in a pass of its own over the output.
``"max_pool"``
    ``max_pool(x, kernel, stride, padding, dilation, indices)``: over x's trailing
    ``len(kernel)`` dims padded with -inf, the max of each window and, when `indices` is
    true (else None), the int32 flat position of the first max within the unpadded dims
    (NaN counts as the largest); returns (values, positions).
``"avg_pool"``
    ``avg_pool(x, windows, divisor)``: over x's trailing ``len(windows)`` dims, the mean of
    a box per output position: ``windows[d]`` holds one ``(start, stop, count)`` per output
    position along dim d, the box covering ``[start, stop)`` clipped to the input (so
    padding adds nothing), its sum divided by the product of its counts, or by `divisor`
    when that is nonzero. Sliding windows, whatever the padding counts, and adaptive
    pooling's windows of varying size are both such boxes.
``"softmax"``
    ``softmax(x, axis, log)``: softmax of x along `axis` (log_softmax when `log`), shifted
    by the row's max where that is finite, by 0 where it is not (as the composite is).
``"layer_norm"``
    ``layer_norm(x, weight, bias, ndims, eps)``: ``(x - mean) / sqrt(var + eps) * weight +
    bias`` over the trailing `ndims` dims (biased variance); `weight` and `bias` have those
    dims' shape, and either may be None (no scale, no shift).
``"batch_norm"``
    ``batch_norm(x, weight, bias, eps)``: x (N, C, ...) normalised with its batch
    statistics, ``(x - mean) / sqrt(var + eps) * weight + bias`` with the mean and biased
    variance over every dim but dim 1 (the channels); `weight` and `bias` are (C,), either
    may be None. Returns ``(y, xhat, mean, var)``: the output, the normalised x before the
    weight and bias (y itself where neither is given), and mean and var of shape (C,).
``"linear"``
    ``linear(x, w, b)``: ``x @ w.T + b`` for x (..., in), w (out, in) and b (out,), or no
    bias where `b` is None; returns (..., out). x may be 1-d (a single row).
``"nll_loss"``
    ``nll_loss(logp, target, axis, weight, ignore_index, reduction)``: logp (N, C, *d), or
    (C,) with `axis` 0, and integer class indices `target` of its shape without `axis`;
    per element ``w = weight[t]`` (1 where `weight` is None, a (C,) handle of logp's dtype)
    and ``-logp[t] * w``, both 0 where ``t == ignore_index``. `reduction` "none" gives those
    losses, "sum" their sum and "mean" that sum divided by the sum of w (NaN where it is 0),
    both 0-d. Returns ``(loss, bad)``: bad is None, or a target that is neither in [0, C)
    nor `ignore_index` (the loss is then undefined), for the caller to report.
    ``nll_loss_grad(g, target, axis, weight, ignore_index, reduction, shape)``: its gradient
    in logp for the output gradient g: zeros of `shape` holding ``-(g * w)`` at each
    element's target (g divided by the sum of w for "mean", and 0 where that sum is 0).
``"adam"``
    ``adam(p, g, m, v, v_max, beta1, beta2, step_size, bias2_sqrt, eps)``: one Adam step of
    a parameter p with gradient g and moments m, v (and, with amsgrad, v_max; else None),
    all of one shape and float dtype; returns new handles ``(p, m, v, v_max)``:
    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * (g * g)``,
    ``v_max = maximum(v_max, v)``, ``p - step_size * (m / (sqrt(v or v_max) / bias2_sqrt +
    eps))``, each operation rounded to the dtype in this order, so that the numbers are the
    composite's bit for bit. Inputs stay unchanged (a state dict taken earlier shares them).

Each op here is one recorded node whose backward rule (``pyburn.autodiff.rules``) is written
with tensor ops, so gradients of gradients work: the three conv ops are each other's
adjoints (conv's bias gets g summed over every dim but the channels), max pooling's
gradient is a ``scatter_add`` at the saved indices, average pooling's is g times each
pooled dim's averaging matrix (the op is separable), softmax's uses its output (saved;
computed again by this same op when the backward pass is itself recorded), layer_norm's
are the composite's gradients written out, linear's are three matrix products and a sum
(g @ w for x, g's rows transposed times x's for w, g summed over the rows for b),
batch_norm's the closed form (from the saved normalised x, computed again in tensor ops
when the backward pass is itself recorded); nll_loss and its gradient are each other's
adjoints (linear in logp and in g). The Adam update is the exception: optimizers run it
under ``no_grad``, so it records nothing and has no rule. Arguments are checked by the
callers; `offered` is the one place that decides between a capability and the composite.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._tensor import Tensor, result, wrap
from ..dtypes import int32
from ..errors import IndexOutOfRange

CONV = "conv"
CONV_BIAS = "conv_bias"
MAX_POOL = "max_pool"
AVG_POOL = "avg_pool"
SOFTMAX = "softmax"
LAYER_NORM = "layer_norm"
BATCH_NORM = "batch_norm"
LINEAR = "linear"
NLL_LOSS = "nll_loss"
ADAM = "adam"
#: the capability each backward rule of this module belongs to
RULES = {"conv": CONV, "conv_transpose": CONV, "conv_weight": CONV, "max_pool": MAX_POOL,
         "avg_pool": AVG_POOL, "softmax": SOFTMAX, "layer_norm": LAYER_NORM,
         "batch_norm": BATCH_NORM, "linear": LINEAR, "nll_loss": NLL_LOSS,
         "nll_loss_grad": NLL_LOSS}

Ints = Sequence[int]
Pads = Sequence[tuple[int, int]]


def offered(capability: str, *tensors: Tensor) -> bool:
    """Whether `capability` runs these tensors: their backend lists it, and they share one
    device and one floating-point dtype (anything else takes the composite, which promotes
    dtypes, handles integers and reports tensors on different devices)."""
    first = tensors[0]
    return (capability in first.device.backend.caps and first.dtype.is_floating_point
            and all(t.dtype is first.dtype and t.device is first.device for t in tensors))


def _windowed(sizes: Ints, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints) -> tuple:
    return tuple((n + b + a - d * (k - 1) - 1) // s + 1
                 for n, k, s, (b, a), d in zip(sizes, kernel, stride, padding, dilation))


def _cut(x: Tensor, padding: Pads) -> tuple[Tensor, list[tuple[int, int]]]:
    """x and `padding` with every negative "after" turned into a cut of x's end (the
    adjoint of a transposed convolution whose output reaches past its last window)."""
    lead = x.ndim - len(padding)
    for i, (_, a) in enumerate(padding):
        if a < 0:
            x = x.narrow(lead + i, 0, x.shape[lead + i] + a)
    return x, [(b, max(a, 0)) for b, a in padding]


def _geometry(stride: Ints, padding: Pads, dilation: Ints, groups: int) -> dict:
    return {"stride": tuple(stride), "padding": tuple(padding), "dilation": tuple(dilation),
            "groups": groups}


def conv(x: Tensor, w: Tensor, stride: Ints, padding: Pads, dilation: Ints, groups: int,
         bias: Tensor | None = None) -> Tensor:
    """The backend's convolution of x (N, C, *S) with w (O, C/groups, *K), plus `bias` (O,)
    per output channel where given (the backend must offer "conv_bias" then); `padding` is
    a (before, after) pair per spatial dim, and a negative "after" cuts x."""
    x, padding = _cut(x, padding)
    out = _windowed(x.shape[2:], w.shape[2:], stride, padding, dilation)
    # no bias argument at all without one: a backend with "conv" alone takes none
    with_bias = () if bias is None else (bias._h,)
    handle = x.device.backend.conv(x._h, w._h, tuple(stride), tuple(padding), tuple(dilation),
                                   groups, *with_bias)
    return result(handle, (x.shape[0], w.shape[0]) + out, x.dtype, "conv",
                  (x, w) if bias is None else (x, w, bias),
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


def max_pool(x: Tensor, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints,
             return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    """The backend's max pooling over x's trailing ``len(kernel)`` dims: the values and,
    with `return_indices`, the int32 flat positions of the maxima (`padding`: (before,
    after) pairs, both >= 0). The backend finds the positions only when they are returned
    or the backward pass needs them."""
    nd = len(kernel)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    shape = lead + _windowed(spatial, kernel, stride, padding, dilation)
    values, positions = x.device.backend.max_pool(x._h, tuple(kernel), tuple(stride),
                                                  tuple(padding), tuple(dilation),
                                                  return_indices or x.requires_grad)
    # recorded even without indices (nothing to differentiate): the ONNX exporter's tracer
    # reads the pooling settings from the record
    indices = None if positions is None else wrap(positions, shape, int32, x.device)
    out = result(values, shape, x.dtype, "max_pool", (x,), indices=indices, nd=nd,
                 kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 dilation=tuple(dilation))
    return (out, indices) if return_indices else out


def avg_pool(x: Tensor, windows: Sequence[Sequence[tuple[int, int, int]]],
             divisor: int) -> Tensor:
    """The backend's average pooling over x's trailing ``len(windows)`` dims: a box per
    output position, one ``(start, stop, count)`` per dim (see "avg_pool" above), its sum
    divided by the product of the counts or by a nonzero `divisor`."""
    windows = tuple(tuple(tuple(row) for row in w) for w in windows)
    handle = x.device.backend.avg_pool(x._h, windows, divisor)
    shape = x.shape[:x.ndim - len(windows)] + tuple(len(w) for w in windows)
    return result(handle, shape, x.dtype, "avg_pool", (x,), windows=windows, divisor=divisor)


def softmax(x: Tensor, dim: int, log: bool) -> Tensor:
    """The backend's softmax of x along `dim` (log_softmax when `log`); `dim` >= 0."""
    handle = x.device.backend.softmax(x._h, dim, log)
    # the output, outside the graph, for a first-order backward pass (only a recorded call,
    # whose input requires grad, has one)
    saved = wrap(handle, x.shape, x.dtype, x.device) if x.requires_grad else None
    return result(handle, x.shape, x.dtype, "softmax", (x,), dim=dim, log=log, out=saved)


def layer_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None, ndims: int,
               eps: float) -> Tensor:
    """The backend's normalisation of x over its trailing `ndims` dims, scaled by `weight`
    and shifted by `bias` where given (each of those dims' shape)."""
    affine = tuple(t for t in (weight, bias) if t is not None)
    handle = x.device.backend.layer_norm(x._h, None if weight is None else weight._h,
                                         None if bias is None else bias._h, ndims, eps)
    return result(handle, x.shape, x.dtype, "layer_norm", (x, *affine), ndims=ndims, eps=eps,
                  weight=weight is not None, bias=bias is not None)


def batch_norm(x: Tensor, weight: Tensor | None, bias: Tensor | None,
               eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """The backend's normalisation of x (N, C, ...) with its batch statistics, scaled by
    `weight` and shifted by `bias` where given (both (C,)): the output, and the batch mean and
    biased variance (C,) outside the graph, for the running statistics."""
    affine = tuple(t for t in (weight, bias) if t is not None)
    y, xhat, mean, var = x.device.backend.batch_norm(
        x._h, None if weight is None else weight._h, None if bias is None else bias._h, eps)
    channels = x.shape[1:2]
    mean, var = (wrap(h, channels, x.dtype, x.device) for h in (mean, var))
    # the normalised x and the variance, outside the graph, for a first-order backward pass
    out = result(y, x.shape, x.dtype, "batch_norm", (x, *affine), eps=eps,
                 weight=weight is not None, bias=bias is not None,
                 xhat=wrap(xhat, x.shape, x.dtype, x.device), var=var)
    return out, mean, var


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """The backend's ``x @ w.T + b``: x (..., in), w (out, in) and b (out,) or None give
    (..., out)."""
    handle = x.device.backend.linear(x._h, w._h, None if b is None else b._h)
    return result(handle, x.shape[:-1] + w.shape[:1], x.dtype, "linear",
                  (x, w) if b is None else (x, w, b))


def nll_loss(logp: Tensor, target: Tensor, axis: int, weight: Tensor | None, ignore_index: int,
             reduction: str, op: str) -> Tensor:
    """The backend's negative log-likelihood of the class indices `target` under the
    log-probabilities `logp` (see "nll_loss" above); a target out of range raises
    IndexOutOfRange naming `op`. `weight` must not require grad (it gets no gradient)."""
    inputs = (logp, target) if weight is None else (logp, target, weight)
    handle, bad = logp.device.backend.nll_loss(logp._h, target._h, axis,
                                               None if weight is None else weight._h,
                                               ignore_index, reduction)
    if bad is not None:
        raise IndexOutOfRange(f"{op}: a target is out of range for {logp.shape[axis]} classes "
                              f"(target {bad})")
    shape = target.shape if reduction == "none" else ()
    return result(handle, shape, logp.dtype, "nll_loss", inputs, axis=axis,
                  ignore_index=ignore_index, reduction=reduction)


def nll_loss_grad(g: Tensor, target: Tensor, axis: int, weight: Tensor | None,
                  ignore_index: int, reduction: str, shape: Ints) -> Tensor:
    """The backend's gradient of `nll_loss` in logp (of `shape`) for its output gradient g."""
    inputs = (g, target) if weight is None else (g, target, weight)
    handle = g.device.backend.nll_loss_grad(g._h, target._h, axis,
                                            None if weight is None else weight._h,
                                            ignore_index, reduction, tuple(shape))
    return result(handle, tuple(shape), g.dtype, "nll_loss_grad", inputs, axis=axis,
                  ignore_index=ignore_index, reduction=reduction)


def adam(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
         max_exp_avg_sq: Tensor | None, beta1: float, beta2: float, step_size: float,
         bias2_sqrt: float, eps: float) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """The backend's Adam step (see "adam" above): the new parameter, exp_avg, exp_avg_sq
    and max_exp_avg_sq (None without amsgrad), as tensors outside any graph."""
    handles = param.device.backend.adam(
        param._h, grad._h, exp_avg._h, exp_avg_sq._h,
        None if max_exp_avg_sq is None else max_exp_avg_sq._h, beta1, beta2, step_size,
        bias2_sqrt, eps)
    p, m, v, v_max = (None if h is None else wrap(h, param.shape, param.dtype, param.device)
                      for h in handles)
    return p, m, v, v_max
