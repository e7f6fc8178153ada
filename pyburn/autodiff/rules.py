"""Backward rules of the primitives, written with tensor ops so that gradients of gradients
work (``create_graph=True``). Elementwise and reduction rules live in their op tables
(``pyburn.ops.elementwise`` and ``pyburn.ops.reducers``, column ``grad``); this table holds
the rest.

A rule takes the gradient of the output, the input snapshots and the saved arguments, and
returns one gradient (or None: nothing flows) per input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..ops import capability
from ..ops.creation import full_like, tensor, zeros
from ..ops.elementwise import BINARY, UNARY
from ..ops.math_ops import where
from ..ops.movement import pad_dim, slice_dim
from ..ops.reducers import REDUCTIONS, Reduction
from ..shape import numel
from ..tape import is_grad_enabled

Grads = tuple[Tensor | None, ...]
Rule = Callable[[Tensor, tuple[Tensor, ...], dict[str, Any]], Grads]


def _zeros(shape: tuple[int, ...], like: Tensor) -> Tensor:
    return zeros(shape, dtype=like.dtype, device=like.device)


def _floating(x: Tensor, g: Tensor) -> Tensor | None:
    return g.cast(x.dtype) if x.dtype.is_floating_point else None


def _cast(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    return (_floating(inputs[0], g),)


def _move(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    return (g.to(inputs[0].device),)


def _reshape(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    return (g.reshape(inputs[0].shape),)


def _permute(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    axes = ctx["axes"]
    return (g.permute([axes.index(i) for i in range(len(axes))]),)


def _expand(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """g summed over the dims the broadcast added in front and those it widened."""
    x = inputs[0]
    lead = g.ndim - x.ndim
    if lead:
        g = g.sum(dim=tuple(range(lead)))
    widened = tuple(i for i, (a, b) in enumerate(zip(x.shape, g.shape)) if a != b)
    return (g.sum(dim=widened, keepdim=True) if widened else g,)


def _slice(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """Scatter g back into zeros of x's shape by padding (zeros between stepped elements)."""

    x = inputs[0]
    for d, (start, step) in enumerate(zip(ctx["starts"], ctx["steps"])):
        n = g.shape[d]
        if step > 1 and n:
            g = pad_dim(g.unsqueeze(d + 1), d + 1, 0, step - 1).flatten(d, d + 1)
            g = g.narrow(d, 0, min(g.shape[d], x.shape[d] - start))
        g = pad_dim(g, d, start, x.shape[d] - start - g.shape[d])
    return (g,)


def _flip(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    return (g.flip(ctx["axes"]),)


def _pad(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    for d, (before, _) in enumerate(ctx["pads"]):
        g = slice_dim(g, d, before, before + inputs[0].shape[d])
    return (g,)


def _cat(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    axis = ctx["axis"]
    return tuple(g.split([x.shape[axis] for x in inputs], axis))


def _where(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    cond = inputs[0]
    zero = _zeros((), g)
    return (None, where(cond, g, zero), where(cond, zero, g))


def _matmul(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """Each gradient is a product as large as the forward one: only the inputs that require
    grad get theirs (a network's first layer needs none for its data)."""
    a, b = inputs
    return (g @ b.mT if a.requires_grad else None, a.mT @ g if b.requires_grad else None)


def _gather(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    x, index = inputs
    return (_zeros(x.shape, g).scatter_add(ctx["axis"], index, g), None)


def _scatter(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    _, index, src = inputs
    axis = ctx["axis"]
    gx = g if ctx["reduce"] == "add" else g.scatter(axis, index, 0.0)
    return (gx, None, g.gather(axis, index) if src.dtype.is_floating_point else None)


def _index_select(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    x, index = inputs
    axis = ctx["axis"]
    shape = [1] * g.ndim
    shape[axis] = index.shape[0]
    spread = index.reshape(shape).broadcast_to(g.shape)
    return (_zeros(x.shape, g).scatter_add(axis, spread, g), None)


def _unary(name: str) -> Rule:
    grad = UNARY[name].grad

    def rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
        return (grad(g, inputs[0]) if grad else None,)

    return rule


def _binary(name: str) -> Rule:
    grad = BINARY[name].grad

    def rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
        return grad(g, *inputs) if grad else (None, None)

    return rule


def _reduction(reduction: Reduction) -> Rule:
    grad = reduction.grad

    def rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
        return (grad(g, inputs[0], ctx["axes"], ctx["result"]) if grad else None,)

    return rule


def _scan(reduction: Reduction) -> Rule:
    grad = reduction.scan_grad

    def rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
        return (grad(g, inputs[0], ctx["axis"]) if grad else None,)

    return rule


# ---- optional capabilities (pyburn.ops.capability) ------------------------------
# The three convolution ops are each other's adjoints: conv is linear in x and in w, its
# gradient in x is the transposed convolution of g, and in w the weight gradient of x and g;
# differentiating those again lands on the same three ops, so every order is covered. Each
# gradient is computed only for an input that requires grad: a network's first layer needs
# no gradient for its data, and each of these is a full convolution's work.
def _conv_geometry(ctx: dict[str, Any]) -> tuple:
    return ctx["stride"], ctx["padding"], ctx["dilation"], ctx["groups"]


def _conv(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """Also the bias's gradient where the convolution took one ("conv_bias"): g summed over
    the batch and the positions."""

    x, w, *bias = inputs
    stride, padding, dilation, groups = _conv_geometry(ctx)
    grads = (capability.conv_transpose(g, w, stride, [b for b, _ in padding], dilation, groups,
                                       x.shape[2:]) if x.requires_grad else None,
             capability.conv_weight(x, g, w.shape[2:], stride, padding, dilation, groups)
             if w.requires_grad else None)
    if not bias:
        return grads
    return grads + (g.sum((0, *range(2, g.ndim))) if bias[0].requires_grad else None,)


def _conv_transpose(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    x, w = inputs
    stride, padding, dilation, groups = _conv_geometry(ctx)
    return (capability.conv(g, w, stride, padding, dilation, groups) if x.requires_grad
            else None,
            capability.conv_weight(g, x, w.shape[2:], stride, padding, dilation, groups)
            if w.requires_grad else None)


def _conv_weight(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    x, gy = inputs
    stride, padding, dilation, groups = _conv_geometry(ctx)
    return (capability.conv_transpose(gy, g, stride, [b for b, _ in padding], dilation, groups,
                                      x.shape[2:]) if x.requires_grad else None,
            capability.conv(x, g, stride, padding, dilation, groups) if gy.requires_grad
            else None)


def _max_pool(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """g added at the position of each window's (first) max, as in PyTorch."""

    x, nd = inputs[0], ctx["nd"]
    lead = x.shape[:-nd]
    flat = _zeros(lead + (numel(x.shape[-nd:]),), g)
    positions = ctx["indices"].reshape(lead + (-1,))
    return (flat.scatter_add(-1, positions, g.reshape(lead + (-1,))).reshape(x.shape),)


def _avg_pool(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """Average pooling is separable: along each pooled dim, row i of an averaging matrix
    holds 1/count over window i (1 with a divisor, which divides once at the end), and the
    gradient is g times those matrices, one dim at a time."""

    x, windows, divisor = inputs[0], ctx["windows"], ctx["divisor"]
    lead = x.ndim - len(windows)
    for j, rows in enumerate(windows):
        n = x.shape[lead + j]
        matrix = [[(1.0 if divisor else 1.0 / count) if start <= c < stop else 0.0
                   for c in range(n)] for start, stop, count in rows]
        averaging = tensor(matrix, dtype=g.dtype, device=g.device).reshape(len(rows), n)
        g = (g.movedim(lead + j, -1) @ averaging).movedim(-1, lead + j)
    return (g / divisor if divisor else g,)


def _softmax(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """From the output y: ``y * (g - sum(g * y))``, or for log_softmax ``g - exp(y) *
    sum(g)``. A first-order pass reads the saved y; a recorded one (create_graph) computes
    it again, so that a second derivative sees it depend on x."""

    dim = ctx["dim"]
    y = capability.softmax(inputs[0], dim, ctx["log"]) if is_grad_enabled() else ctx["out"]
    if ctx["log"]:
        return (g - y.exp() * g.sum(dim, keepdim=True),)
    return (y * (g - (g * y).sum(dim, keepdim=True)),)


def _nll_loss(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    logp, target, *weight = inputs
    unused = (None,) * (len(inputs) - 1)  # the targets, and a weight that requires no grad
    if not logp.requires_grad:
        return (None,) + unused
    return (capability.nll_loss_grad(g, target, ctx["axis"], weight[0] if weight else None,
                                     ctx["ignore_index"], ctx["reduction"], logp.shape),
            ) + unused


def _nll_loss_grad(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """The adjoint of the gradient in the output gradient: the nll loss of g itself, where
    "mean" divides by the sum of the weights as the gradient does (0 where it is 0, which
    the loss would make NaN). That sum is the "sum" loss of -1 everywhere."""

    _, target, *weight = inputs
    picking = (target, ctx["axis"], weight[0] if weight else None, ctx["ignore_index"])
    if ctx["reduction"] != "mean":
        return (capability.nll_loss(g, *picking, ctx["reduction"], "nll_loss"),) + \
            (None,) * (len(inputs) - 1)
    total = capability.nll_loss(g, *picking, "sum", "nll_loss")
    w_sum = capability.nll_loss(full_like(g, -1.0), *picking, "sum", "nll_loss")
    some = w_sum != 0
    return (where(some, total / where(some, w_sum, 1.0), 0.0),) + (None,) * (len(inputs) - 1)


def _layer_norm(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
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


def _batch_norm(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
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


def _linear(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """For ``x @ w.T + b``: ``g @ w`` for x, g's rows transposed times x's rows for w (one
    product over the batch dims, and (out, in) like w, so the optimizer's passes over w
    and its gradient run on one layout), g summed over the rows for b. As for matmul, only
    the inputs that require grad get theirs."""

    x, w, *bias = inputs

    def rows(t: Tensor) -> Tensor:
        return t if t.ndim == 2 else t.reshape(numel(t.shape[:-1]), t.shape[-1])

    grads = (g @ w if x.requires_grad else None,
             rows(g).mT @ rows(x) if w.requires_grad else None)
    if not bias:
        return grads
    lead = tuple(range(g.ndim - 1))
    return grads + ((g.sum(lead) if lead else g) if bias[0].requires_grad else None,)


RULES: dict[str, Rule] = {
    "cast": _cast, "move": _move, "reshape": _reshape, "permute": _permute,
    "expand": _expand, "slice": _slice, "flip": _flip, "pad": _pad, "cat": _cat,
    "where": _where, "matmul": _matmul, "gather": _gather, "scatter": _scatter,
    "index_select": _index_select, "conv": _conv,
    "conv_transpose": _conv_transpose, "conv_weight": _conv_weight, "max_pool": _max_pool,
    "avg_pool": _avg_pool, "softmax": _softmax, "layer_norm": _layer_norm,
    "batch_norm": _batch_norm, "linear": _linear,
    "nll_loss": _nll_loss, "nll_loss_grad": _nll_loss_grad,
}
RULES.update({f"unary:{name}": _unary(name) for name in UNARY})
RULES.update({f"binary:{name}": _binary(name) for name in BINARY})
RULES.update({r.rule: _reduction(r) for r in REDUCTIONS.values() if r.grad})
RULES.update({r.scan_rule: _scan(r) for r in REDUCTIONS.values() if r.scans})
