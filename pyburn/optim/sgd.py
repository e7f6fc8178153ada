"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from .optimizer import Optimizer, Params, check_option


class SGD(Optimizer):
    """Gradient descent: ``p -= lr * g``, with optionally

    - `weight_decay` (L2): ``g += weight_decay * p``;
    - `momentum` μ with `dampening` τ: ``b = μ b + (1 - τ) g`` (``b = g`` on the first
      step), then ``g = b``, or ``g += μ b`` with ``nesterov=True``;
    - `maximize`: ascend instead (the gradient is negated first).

    State per parameter: "momentum_buffer" (when momentum is used).

    >>> import pyburn
    >>> w = pyburn.tensor([1.0, 2.0], device="flex")
    >>> w.grad = pyburn.tensor([1.0, 1.0], device="flex")
    >>> SGD([w], lr=0.5).step()
    >>> w.tolist()
    [0.5, 1.5]
    """

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False):
        check_option("lr", lr, lr >= 0.0, "a number >= 0")
        check_option("momentum", momentum, momentum >= 0.0, "a number >= 0")
        check_option("weight_decay", weight_decay, weight_decay >= 0.0, "a number >= 0")
        check_option("nesterov", nesterov, not nesterov or (momentum > 0 and dampening == 0),
                     "nesterov=True only with momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """One SGD step for `param` (see the class docstring)."""
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        momentum = group["momentum"]
        if momentum:
            buf = state.get("momentum_buffer")
            buf = grad if buf is None else momentum * buf + (1.0 - group["dampening"]) * grad
            state["momentum_buffer"] = buf
            grad = grad + momentum * buf if group["nesterov"] else buf
        return param - group["lr"] * grad
