"""Backward rules of the primitives, written with tensor ops so that gradients of gradients
work (``create_graph=True``). The rules of elementwise ops, reductions and capabilities live
in their tables' records (``pyburn.ops.elementwise``, ``pyburn.ops.reducers``,
``pyburn.ops.capability``); this table gathers them and holds the rest.

A rule takes the gradient of the output, the input snapshots and the saved arguments, and
returns one gradient (or None: nothing flows) per input.
"""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..ops import capability
from ..ops.creation import zeros
from ..ops.elementwise import BINARY, UNARY
from ..ops.math_ops import where
from ..ops.movement import pad_dim, slice_dim
from ..ops.reducers import REDUCTIONS, Reduction
from ..tape import Grads, Rule


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


def _custom(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """A function with a backward of its own (``pyburn.kernel.op``): ``ctx["backward"](g,
    *inputs)`` gives one gradient (or None) per input."""
    grads = tuple(ctx["backward"](g, *inputs))
    if len(grads) != len(inputs):
        raise ArgumentError(f"{ctx['name']}'s backward gave {len(grads)} gradients for "
                            f"{len(inputs)} inputs")
    for grad, x in zip(grads, inputs):
        if grad is not None and grad.shape != x.shape:
            raise ShapeError(f"{ctx['name']}'s backward gave a gradient of shape {grad.shape} "
                             f"for an input of shape {x.shape}")
    return grads


RULES: dict[str, Rule] = {
    "custom": _custom, "cast": _cast, "move": _move, "reshape": _reshape, "permute": _permute,
    "expand": _expand, "slice": _slice, "flip": _flip, "pad": _pad, "cat": _cat,
    "where": _where, "matmul": _matmul, "gather": _gather, "scatter": _scatter,
    "index_select": _index_select,
}
RULES.update({f"unary:{name}": _unary(name) for name in UNARY})
RULES.update({f"binary:{name}": _binary(name) for name in BINARY})
RULES.update({r.rule: _reduction(r) for r in REDUCTIONS.values() if r.grad})
RULES.update({r.scan_rule: _scan(r) for r in REDUCTIONS.values() if r.scans})
RULES.update(capability.RULES)
