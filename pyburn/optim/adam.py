"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from ..ops import capability
from ..ops.creation import zeros_like
from ..ops.math_ops import maximum
from ..tape import is_grad_enabled
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
    A backend that offers the "adam" capability (the cpu backend) runs the moments and the
    update as one call, with the same numbers.
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
        m, v = state["exp_avg"], state["exp_avg_sq"]
        v_max = state["max_exp_avg_sq"] if group["amsgrad"] else None
        step_size = lr / (1.0 - beta1**step)
        bias2_sqrt = math.sqrt(1.0 - beta2**step)
        tensors = (param, grad, m, v) if v_max is None else (param, grad, m, v, v_max)
        if capability.offered(capability.ADAM, *tensors) and not _recorded(tensors):
            param, m, v, v_max = capability.adam(param, grad, m, v, v_max, beta1, beta2,
                                                 step_size, bias2_sqrt, group["eps"])
        else:
            m = beta1 * m + (1.0 - beta1) * grad
            v = beta2 * v + (1.0 - beta2) * (grad * grad)
            if v_max is not None:
                v_max = maximum(v_max, v)
            denom = (v if v_max is None else v_max).sqrt() / bias2_sqrt + group["eps"]
            param = param - step_size * (m / denom)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        if v_max is not None:
            state["max_exp_avg_sq"] = v_max
        return param


def _recorded(tensors: tuple[Tensor, ...]) -> bool:
    """Whether ops on `tensors` would be recorded (an update called outside `step`, with
    gradients on): only the composite builds a graph."""
    return is_grad_enabled() and any(t.requires_grad for t in tensors)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): each step first shrinks
    the parameter, ``p *= 1 - lr * weight_decay``, instead of adding an L2 term to the
    gradient. Same options and state as `Adam`; `weight_decay` defaults to 0.01."""

    def __init__(self, params: Params, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
