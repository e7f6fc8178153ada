"""Softmax and normalisation over rows as one backend call: the "softmax", "layer_norm",
"batch_norm" and "batch_norm_eval" capabilities."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, result, wrap
from ...tape import Grads, is_grad_enabled
from .record import Capability


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


def batch_norm_eval(x: Tensor, running_mean: Tensor, running_var: Tensor,
                    weight: Tensor | None, bias: Tensor | None, eps: float) -> Tensor:
    """The backend's normalisation of x (N, C, ...) with given statistics (C,) each, scaled
    by `weight` and shifted by `bias` where given (both (C,)): batch norm in evaluation."""
    affine = tuple(t for t in (weight, bias) if t is not None)
    backend: Any = x.device.backend  # a backend that offers "batch_norm_eval"
    handle = backend.batch_norm_eval(x._h, running_mean._h, running_var._h,
                                     None if weight is None else weight._h,
                                     None if bias is None else bias._h, eps)
    return result(handle, x.shape, x.dtype, "batch_norm_eval",
                  (x, running_mean, running_var, *affine), eps=eps,
                  weight=weight is not None, bias=bias is not None)


def _softmax_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """From the output y: ``y * (g - sum(g * y))``, or for log_softmax ``g - exp(y) *
    sum(g)``. A first-order pass reads the saved y; a recorded one (create_graph) computes
    it again, so that a second derivative sees it depend on x."""
    dim = ctx["dim"]
    y = softmax(inputs[0], dim, ctx["log"]) if is_grad_enabled() else ctx["out"]
    if ctx["log"]:
        return (g - y.exp() * g.sum(dim, keepdim=True),)
    return (y * (g - (g * y).sum(dim, keepdim=True)),)


def _layer_norm_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """With y the normalised x and rstd the reciprocal standard deviation (both from x in
    tensor ops) and g' = g * weight: ``rstd * (g' - mean(g') - y * mean(g' * y))`` for x,
    ``sum(g * y)`` for the weight and ``sum(g)`` for the bias, over the lead dims."""
    x, *affine = inputs
    weight = affine.pop(0) if ctx["weight"] else None
    bias = affine.pop(0) if ctx["bias"] else None
    dims = tuple(range(x.ndim - ctx["ndims"], x.ndim))
    lead = tuple(range(x.ndim - ctx["ndims"]))
    centred = x - x.mean(dims, keepdim=True)
    rstd = ((centred * centred).mean(dims, keepdim=True) + ctx["eps"]).rsqrt()
    y = centred * rstd

    def over_lead(t: Tensor) -> Tensor:
        return t.sum(lead) if lead else t

    gy = g if weight is None else g * weight
    grads: list[Tensor | None] = [
        rstd * (gy - gy.mean(dims, keepdim=True) - y * (gy * y).mean(dims, keepdim=True))
        if x.requires_grad else None]
    if weight is not None:
        grads.append(over_lead(g * y) if weight.requires_grad else None)
    if bias is not None:
        grads.append(over_lead(g) if bias.requires_grad else None)
    return tuple(grads)


def _batch_norm_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """The closed form, with sums over every dim but the channels (n values each), xhat the
    normalised x and rstd the reciprocal standard deviation: ``weight * rstd * (g - sum(g) /
    n - xhat * sum(g * xhat) / n)`` for x, ``sum(g * xhat)`` for the weight and ``sum(g)``
    for the bias, each only for an input that requires grad. A first-order pass reads xhat
    and the variance the forward pass saved; a recorded one (create_graph) computes them
    again from x in tensor ops, so that a second derivative sees them depend on x."""
    x, *affine = inputs
    weight = affine.pop(0) if ctx["weight"] else None
    bias = affine.pop(0) if ctx["bias"] else None
    dims = (0,) + tuple(range(2, x.ndim))
    view = x.shape[1:2] + (1,) * (x.ndim - 2)
    if is_grad_enabled():
        centred = x - x.mean(dims, keepdim=True)
        rstd = ((centred * centred).mean(dims) + ctx["eps"]).rsqrt()
        xhat = centred * rstd.reshape(view)
    else:
        xhat, rstd = ctx["xhat"], (ctx["var"] + ctx["eps"]).rsqrt()
    wants_w = weight is not None and weight.requires_grad
    wants_b = bias is not None and bias.requires_grad
    sum_g = g.sum(dims) if x.requires_grad or wants_b else None
    sum_gx = (g * xhat).sum(dims) if x.requires_grad or wants_w else None
    grads: list[Tensor | None] = [None]
    if x.requires_grad:
        # the sums divided by n (tiny tensors), not g multiplied by n: n * g would overflow
        # float16 for a large batch
        n = x.numel() // x.shape[1]
        scale = rstd if weight is None else weight * rstd
        grads[0] = scale.reshape(view) * (g - (sum_g / n).reshape(view)
                                          - xhat * (sum_gx / n).reshape(view))
    if weight is not None:
        grads.append(sum_gx if wants_w else None)
    if bias is not None:
        grads.append(sum_g if wants_b else None)
    return tuple(grads)


def _batch_norm_eval_rule(g: Tensor, inputs: tuple[Tensor, ...],
                          ctx: dict[str, Any]) -> Grads:
    """With rstd = rsqrt(var + eps) from the given statistics and sums over every dim but
    the channels: ``g * weight * rstd`` for x, ``sum(g * (x - mean) * rstd)`` for the weight
    and ``sum(g)`` for the bias, each only for an input that requires grad; the statistics
    get none (the callers record this op only for statistics that require no grad)."""
    x, mean, var, *affine = inputs
    weight = affine.pop(0) if ctx["weight"] else None
    bias = affine.pop(0) if ctx["bias"] else None
    dims = (0,) + tuple(range(2, x.ndim))
    view = x.shape[1:2] + (1,) * (x.ndim - 2)
    rstd = (var + ctx["eps"]).rsqrt()
    grads: list[Tensor | None] = [None, None, None]
    if x.requires_grad:
        grads[0] = g * (rstd if weight is None else weight * rstd).reshape(view)
    if weight is not None:
        grads.append(((g * (x - mean.reshape(view))).sum(dims) * rstd)
                     if weight.requires_grad else None)
    if bias is not None:
        grads.append(g.sum(dims) if bias.requires_grad else None)
    return tuple(grads)


SOFTMAX = Capability(
    "softmax", ("softmax",),
    """``softmax(x, axis, log)``: softmax of x along `axis` (log_softmax when `log`), shifted
    by the row's max where that is finite, by 0 where it is not (as the composite is).""",
    "pyburn.nn.functional.softmax",
    rules={"softmax": _softmax_rule}, onnx={"softmax": "Softmax, LogSoftmax"})

LAYER_NORM = Capability(
    "layer_norm", ("layer_norm",),
    """``layer_norm(x, weight, bias, ndims, eps)``: ``(x - mean) / sqrt(var + eps) * weight +
    bias`` over the trailing `ndims` dims (biased variance); `weight` and `bias` have those
    dims' shape, and either may be None (no scale, no shift).""",
    "pyburn.nn.functional.layer_norm",
    rules={"layer_norm": _layer_norm_rule}, onnx={"layer_norm": "LayerNormalization"})

BATCH_NORM = Capability(
    "batch_norm", ("batch_norm",),
    """``batch_norm(x, weight, bias, eps)``: x (N, C, ...) normalised with its batch
    statistics, ``(x - mean) / sqrt(var + eps) * weight + bias`` with the mean and biased
    variance over every dim but dim 1 (the channels); `weight` and `bias` are (C,), either
    may be None. Returns ``(y, xhat, mean, var)``: the output, the normalised x before the
    weight and bias (y itself where neither is given), and mean and var of shape (C,).""",
    "pyburn.nn.functional.batch_norm",
    rules={"batch_norm": _batch_norm_rule},
    onnx={"batch_norm": "ReduceMean, Sub, Mul, Sqrt, Div, Add (the composite's operators)"})

BATCH_NORM_EVAL = Capability(
    "batch_norm_eval", ("batch_norm_eval",),
    """``batch_norm_eval(x, mean, var, weight, bias, eps)``: x (N, C, ...) normalised with
    the given statistics, ``(x - mean) * rsqrt(var + eps) * weight + bias`` per channel (dim
    1); mean, var, `weight` and `bias` are (C,), and either of the last two may be None. It
    computes as the composite does: per channel ``scale = rsqrt(var + eps) * weight`` and
    ``shift = bias - mean * scale`` (``-(mean * scale)`` without bias), rounded to x's dtype,
    then ``x * scale + shift``, rounded after the product and after the sum (no fused
    multiply-add), into a new handle of x's shape and dtype.""",
    "pyburn.nn.functional.batch_norm",
    rules={"batch_norm_eval": _batch_norm_eval_rule},
    onnx={"batch_norm_eval": "Add, Sqrt, Reciprocal, Mul, Sub or Neg, Unsqueeze (the "
                             "composite's operators)"})
