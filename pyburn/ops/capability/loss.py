"""The negative log-likelihood loss and its gradient as one backend call each: the
"nll_loss" capability."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, result
from ...errors import IndexOutOfRange
from ...tape import Grads
from ..creation import full_like
from ..index_checks import call_site
from ..math_ops import where
from .record import Capability, Ints


def nll_loss(logp: Tensor, target: Tensor, axis: int, weight: Tensor | None, ignore_index: int,
             reduction: str, op: str) -> Tensor:
    """The backend's negative log-likelihood of the class indices `target` under the
    log-probabilities `logp` (see "nll_loss" above); a target out of range raises
    IndexOutOfRange naming `op`. `weight` must not require grad (it gets no gradient)."""
    inputs = (logp, target) if weight is None else (logp, target, weight)
    backend = logp.device.backend
    # a backend that checks where its ops run (remote) checks the targets there, in order
    backend.queue_range_check(target._h, target.ndim, target.dtype, 0, logp.shape[axis],
                              op, call_site, ignore=ignore_index)
    handle, bad = backend.nll_loss(logp._h, target._h, axis,
                                   None if weight is None else weight._h, ignore_index,
                                   reduction)
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


def _nll_loss_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    logp, target, *weight = inputs
    unused = (None,) * (len(inputs) - 1)  # the targets, and a weight that requires no grad
    if not logp.requires_grad:
        return (None,) + unused
    return (nll_loss_grad(g, target, ctx["axis"], weight[0] if weight else None,
                                     ctx["ignore_index"], ctx["reduction"], logp.shape),
            ) + unused


def _nll_loss_grad_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """The adjoint of the gradient in the output gradient: the nll loss of g itself, where
    "mean" divides by the sum of the weights as the gradient does (0 where it is 0, which
    the loss would make NaN). That sum is the "sum" loss of -1 everywhere."""
    _, target, *weight = inputs
    picking = (target, ctx["axis"], weight[0] if weight else None, ctx["ignore_index"])
    if ctx["reduction"] != "mean":
        return (nll_loss(g, *picking, ctx["reduction"], "nll_loss"),) + \
            (None,) * (len(inputs) - 1)
    total = nll_loss(g, *picking, "sum", "nll_loss")
    w_sum = nll_loss(full_like(g, -1.0), *picking, "sum", "nll_loss")
    some = w_sum != 0
    return (where(some, total / where(some, w_sum, 1.0), 0.0),) + (None,) * (len(inputs) - 1)


NLL_LOSS = Capability(
    "nll_loss", ("nll_loss", "nll_loss_grad"),
    """``nll_loss(logp, target, axis, weight, ignore_index, reduction)``: logp (N, C, *d), or
    (C,) with `axis` 0, and integer class indices `target` of its shape without `axis`;
    per element ``w = weight[t]`` (1 where `weight` is None, a (C,) handle of logp's dtype)
    and ``-logp[t] * w``, both 0 where ``t == ignore_index``. `reduction` "none" gives those
    losses, "sum" their sum and "mean" that sum divided by the sum of w (NaN where it is 0),
    both 0-d. Returns ``(loss, bad)``: bad is None, or a target that is neither in [0, C)
    nor `ignore_index` (the loss is then undefined), for the caller to report.
    ``nll_loss_grad(g, target, axis, weight, ignore_index, reduction, shape)``: its gradient
    in logp for the output gradient g: zeros of `shape` holding ``-(g * w)`` at each
    element's target (g divided by the sum of w for "mean", and 0 where that sum is 0).""",
    "pyburn.nn.functional.nll_loss",
    rules={"nll_loss": _nll_loss_rule, "nll_loss_grad": _nll_loss_grad_rule},
    onnx={"nll_loss": "NegativeLogLikelihoodLoss"})
