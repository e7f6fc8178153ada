"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from typing import Any

from ..creation import zeros_like
from ..math_ops import maximum
from ..tensor import Tensor
from .optimizer import Optimizer, Params, check_betas, check_option


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015). Per step t, with β1, β2 = `betas`:

    - ``m = β1 m + (1 - β1) g``, ``v = β2 v + (1 - β2) g²`` (both start at 0);
    - with `amsgrad`, ``v_max = max(v_max, v)`` is used in place of v;
    - ``p -= lr / (1 - β1^t) * m / (sqrt(v) / sqrt(1 - β2^t) + eps)``.

    `weight_decay` adds ``weight_decay * p`` to the gradient (L2), or, with
    ``decoupled_weight_decay=True`` (which is `AdamW`), shrinks the parameter first:
    ``p *= 1 - lr * weight_decay``. `maximize` ascends instead.

    State per parameter: "step", "exp_avg", "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq".
    """

    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False):
        check_option("lr", lr, lr >= 0.0, "a number >= 0")
        check_betas(betas)
        check_option("eps", eps, eps >= 0.0, "a number >= 0")
        check_option("weight_decay", weight_decay, weight_decay >= 0.0, "a number >= 0")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def update(self, param: Tensor, grad: Tensor, state: dict[str, Any],
               group: dict[str, Any]) -> Tensor:
        """One Adam step for `param` (see the class docstring)."""
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        if not state:
            state.update(step=0, exp_avg=zeros_like(param), exp_avg_sq=zeros_like(param))
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        state["step"] = step = state["step"] + 1
        if wd and group["decoupled_weight_decay"]:
            param = param * (1.0 - lr * wd)
        elif wd:
            grad = grad + wd * param
        m = state["exp_avg"] = beta1 * state["exp_avg"] + (1.0 - beta1) * grad
        v = state["exp_avg_sq"] = beta2 * state["exp_avg_sq"] + (1.0 - beta2) * (grad * grad)
        if group["amsgrad"]:
            v = state["max_exp_avg_sq"] = maximum(state["max_exp_avg_sq"], v)
        denom = v.sqrt() / math.sqrt(1.0 - beta2**step) + group["eps"]
        return param - lr / (1.0 - beta1**step) * (m / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): each step first shrinks
    the parameter, ``p *= 1 - lr * weight_decay``, instead of adding an L2 term to the
    gradient. Same options and state as `Adam`; `weight_decay` defaults to 0.01."""

    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
