"""RMSprop: gradient steps scaled by a running root mean square of the gradients."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..ops.creation import zeros_like
from .optimizer import Optimizer, Params, check_option


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e). Per step, with smoothing constant α = `alpha`:

    - ``v = α v + (1 - α) g²``;
    - `centered`: also ``ḡ = α ḡ + (1 - α) g`` and use ``v - ḡ²`` (a variance) for v;
    - ``d = sqrt(v) + eps``; ``p -= lr * g / d``, or with `momentum` μ:
      ``b = μ b + g / d``, ``p -= lr * b``.

    `weight_decay` adds ``weight_decay * p`` to the gradient; `maximize` ascends instead.
    State per parameter: "step", "square_avg", "momentum_buffer" (momentum > 0) and
    "grad_avg" (centered).
    """

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False):
        check_option("lr", lr, lr >= 0.0, "a number >= 0")
        check_option("alpha", alpha, 0.0 <= alpha <= 1.0, "a number in [0, 1]")
        check_option("eps", eps, eps >= 0.0, "a number >= 0")
        check_option("momentum", momentum, momentum >= 0.0, "a number >= 0")
        check_option("weight_decay", weight_decay, weight_decay >= 0.0, "a number >= 0")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """One RMSprop step for `param` (see the class docstring)."""
        alpha, momentum = group["alpha"], group["momentum"]
        if not state:
            state.update(step=0, square_avg=zeros_like(param))
            if momentum > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        state["step"] += 1
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        v = state["square_avg"] = alpha * state["square_avg"] + (1.0 - alpha) * (grad * grad)
        if group["centered"]:
            mean = state["grad_avg"] = alpha * state["grad_avg"] + (1.0 - alpha) * grad
            v = v - mean * mean
        direction = grad / (v.sqrt() + group["eps"])
        if momentum > 0:
            direction = state["momentum_buffer"] = momentum * state["momentum_buffer"] + direction
        return param - group["lr"] * direction
