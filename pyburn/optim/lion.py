"""Lion: the sign of an interpolated momentum as the update (Chen et al., 2023)."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..ops.creation import zeros_like
from .optimizer import Optimizer, Params, check_betas, check_option


class Lion(Optimizer):
    """Lion, "EvoLved Sign Momentum" (Chen et al., 2023, Algorithm 2). Per step, with
    β1, β2 = `betas`:

    - ``c = β1 m + (1 - β1) g``;
    - ``p = p * (1 - lr * weight_decay) - lr * sign(c)`` (decoupled weight decay);
    - ``m = β2 m + (1 - β2) g`` (m starts at 0).

    Every coordinate moves by exactly lr (or 0 where c is 0), so Lion wants a learning rate
    3-10x smaller than AdamW's and a weight decay 3-10x larger, as the paper advises.
    `maximize` ascends instead. State per parameter: "exp_avg".
    """

    def __init__(self, params: Params, lr: float = 1e-4,
                 betas: tuple[float, float] = (0.9, 0.99), weight_decay: float = 0.0, *,
                 maximize: bool = False):
        check_option("lr", lr, lr >= 0.0, "a number >= 0")
        check_betas(betas)
        check_option("weight_decay", weight_decay, weight_decay >= 0.0, "a number >= 0")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay,
                                      maximize=maximize))

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """One Lion step for `param` (see the class docstring)."""
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        if not state:
            state["exp_avg"] = zeros_like(param)
        m = state["exp_avg"]
        direction = (beta1 * m + (1.0 - beta1) * grad).sign()
        state["exp_avg"] = beta2 * m + (1.0 - beta2) * grad
        if wd:
            param = param * (1.0 - lr * wd)
        return param - lr * direction
