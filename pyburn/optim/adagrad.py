"""Adagrad: per-coordinate steps scaled by the accumulated squared gradients."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..ops.creation import full_like
from .optimizer import Optimizer, Params, check_option


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011). Per step t:

    - ``s += g²`` (s starts at `initial_accumulator_value`);
    - ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``.

    `weight_decay` adds ``weight_decay * p`` to the gradient; `maximize` ascends instead.
    State per parameter: "step", "sum".
    """

    def __init__(self, params: Params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False):
        check_option("lr", lr, lr >= 0.0, "a number >= 0")
        check_option("lr_decay", lr_decay, lr_decay >= 0.0, "a number >= 0")
        check_option("weight_decay", weight_decay, weight_decay >= 0.0, "a number >= 0")
        check_option("initial_accumulator_value", initial_accumulator_value,
                     initial_accumulator_value >= 0.0, "a number >= 0")
        check_option("eps", eps, eps >= 0.0, "a number >= 0")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """One Adagrad step for `param` (see the class docstring)."""
        if not state:
            state.update(step=0, sum=full_like(param, group["initial_accumulator_value"]))
        state["step"] = step = state["step"] + 1
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        total = state["sum"] = state["sum"] + grad * grad
        lr = group["lr"] / (1.0 + (step - 1) * group["lr_decay"])
        return param - lr * (grad / (total.sqrt() + group["eps"]))
