"""Gradient clipping, by total norm and by value (PyTorch's ``torch.nn.utils`` functions).

The norm is computed and applied with tensor ops only: clipping never reads a value back to
Python (which would wait for a GPU), unless ``error_if_nonfinite`` asks to check the norm.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._tensor import Tensor
from ..errors import ArgumentError
from ..ops.creation import tensor
from ..ops.movement import stack
from ..tape import no_grad

#: added to the total norm before dividing, so that a zero norm does not divide by zero
_EPS = 1e-6


def _as_list(tensors: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False) -> Tensor:
    """The `norm_type`-norm of all `tensors` together, as if concatenated into one vector
    (norm_type may be ``math.inf``), as a 0-d tensor on the first tensor's device; 0 when
    there are no tensors."""
    tensors = _as_list(tensors)
    if not tensors:
        return tensor(0.0)
    norm_type = float(norm_type)
    first = tensors[0]
    with no_grad():
        norms = [t.norm(norm_type).to(first.device).cast(first.dtype) for t in tensors]
        total = stack(norms).norm(norm_type)
    if error_if_nonfinite and not total.isfinite().item():
        raise ArgumentError(f"the total {norm_type}-norm of the gradients is {total.item()}, "
                            "so they cannot be clipped; pass error_if_nonfinite=False to clip "
                            "anyway (the gradients then become NaN)")
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor) -> None:
    """Scale the gradients of `parameters` in place by ``min(1, max_norm / (total_norm +
    1e-6))``, given their total norm (from `get_total_norm`)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + _EPS)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device).cast(g.dtype))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Rescale the gradients of `parameters` in place so that their total `norm_type`-norm
    is at most `max_norm` (gradients that are None are skipped). Returns the total norm
    before clipping, as a tensor.

    >>> import pyburn
    >>> from pyburn.optim import clip_grad_norm_
    >>> w = pyburn.zeros(2, device="flex")
    >>> w.grad = pyburn.tensor([3.0, 4.0], device="flex")
    >>> clip_grad_norm_([w], max_norm=1.0).item()
    5.0
    >>> [round(x, 4) for x in w.grad.tolist()]
    [0.6, 0.8]
    """
    parameters = _as_list(parameters)  # a generator such as model.parameters() is read twice
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient of `parameters` in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
