"""The Adam update as one backend call: the "adam" capability."""

from __future__ import annotations

from ..._tensor import Tensor, wrap
from .record import Capability


def adam(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
         max_exp_avg_sq: Tensor | None, beta1: float, beta2: float, step_size: float,
         bias2_sqrt: float, eps: float) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """The backend's Adam step (see "adam" above): the new parameter, exp_avg, exp_avg_sq
    and max_exp_avg_sq (None without amsgrad), as tensors outside any graph."""
    handles = param.device.backend.adam(
        param._h, grad._h, exp_avg._h, exp_avg_sq._h,
        None if max_exp_avg_sq is None else max_exp_avg_sq._h, beta1, beta2, step_size,
        bias2_sqrt, eps)
    p, m, v, v_max = (None if h is None else wrap(h, param.shape, param.dtype, param.device)
                      for h in handles)
    return p, m, v, v_max


ADAM = Capability(
    "adam", ("adam",),
    """``adam(p, g, m, v, v_max, beta1, beta2, step_size, bias2_sqrt, eps)``: one Adam step of
    a parameter p with gradient g and moments m, v (and, with amsgrad, v_max; else None),
    all of one shape and float dtype; returns new handles ``(p, m, v, v_max)``:
    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * (g * g)``,
    ``v_max = maximum(v_max, v)``, ``p - step_size * (m / (sqrt(v or v_max) / bias2_sqrt +
    eps))``, each operation rounded to the dtype in this order, so that the numbers are the
    composite's bit for bit. Inputs stay unchanged (a state dict taken earlier shares them).
    Optimizers run it under ``no_grad``: it records nothing and has no rule.""",
    "pyburn.optim.Adam")
