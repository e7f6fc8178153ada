"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..ops.creation import zeros_like
from ..ops.math_ops import maximum
from .optimizer import Optimizer, Params, check_betas, check_option


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015, section 7). Per step t, with β1, β2 = `betas`:

    - ``m = β1 m + (1 - β1) g``, ``u = max(β2 u, |g| + eps)`` (both start at 0);
    - ``p -= lr / (1 - β1^t) * m / u``.

    `weight_decay` adds ``weight_decay * p`` to the gradient; `maximize` ascends instead.
    State per parameter: "step", "exp_avg", "exp_inf".
    """

    def __init__(self, params: Params, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, *, maximize: bool = False):
        check_option("lr", lr, lr >= 0.0, "a number >= 0")
        check_betas(betas)
        check_option("eps", eps, eps >= 0.0, "a number >= 0")
        check_option("weight_decay", weight_decay, weight_decay >= 0.0, "a number >= 0")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize))

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """One Adamax step for `param` (see the class docstring)."""
        beta1, beta2 = group["betas"]
        if not state:
            state.update(step=0, exp_avg=zeros_like(param), exp_inf=zeros_like(param))
        state["step"] = step = state["step"] + 1
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        m = state["exp_avg"] = beta1 * state["exp_avg"] + (1.0 - beta1) * grad
        u = state["exp_inf"] = maximum(beta2 * state["exp_inf"], grad.abs() + group["eps"])
        return param - group["lr"] / (1.0 - beta1**step) * (m / u)
