"""Kernels as differentiable Tensor functions: `op` records a forward computed by kernel
launches with a backward the user writes (with kernels or tensor ops), and `gradcheck`
compares that backward with finite differences."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError
from ..ops.creation import tensor
from ..tape import is_grad_enabled, no_grad, record

Backward = Callable[..., tuple[Tensor | None, ...]]


def op(forward: Callable[..., Tensor], backward: Backward | None = None
       ) -> Callable[..., Tensor]:
    """A Tensor function: ``forward(*tensors)`` gives a tensor (by launching kernels, say),
    and on an autodiff device the result is recorded so that ``backward(grad, *tensors)``
    gives each input's gradient (None for one that gets none). Without `backward` the result
    is not differentiable, and an input that requires grad is an error.

    >>> import pyburn
    >>> from pyburn.kernel import op
    >>> square = op(lambda x: x * x, backward=lambda g, x: (2 * g * x,))
    >>> x = pyburn.tensor([1.0, 3.0], device=pyburn.device("flex").autodiff(),
    ...                   requires_grad=True)
    >>> square(x).sum().backward()
    >>> x.grad.tolist()
    [2.0, 6.0]
    """
    name = getattr(forward, "__name__", "op")

    @functools.wraps(forward)
    def apply(*inputs: Any) -> Tensor:
        tensors = tuple(t for t in inputs if isinstance(t, Tensor))
        differentiated = is_grad_enabled() and any(t.requires_grad for t in tensors)
        if differentiated and backward is None:
            raise ArgumentError(f"{name} has no backward: give op(forward, backward=...) to "
                                "differentiate it")
        with no_grad():
            out = forward(*inputs)
        if not isinstance(out, Tensor):
            raise ArgumentError(f"{name}'s forward returns one tensor, not "
                                f"{type(out).__name__}")
        if differentiated:
            record(out, "custom", tensors, {"backward": backward, "name": name})
        return out

    return apply


def gradcheck(fn: Callable[..., Tensor], *inputs: Tensor, eps: float = 1e-2,
              atol: float = 1e-2, rtol: float = 1e-2, seed: int = 0) -> bool:
    """Check `fn`'s gradients in the inputs that require grad against central differences
    of a random projection of its output; raises ArgumentError naming the first element
    that differs, else returns True. For small float32 inputs (the differences are taken
    in float32: hence the loose default tolerances)."""
    rng = random.Random(seed)
    out = fn(*inputs)
    weights = tensor([rng.uniform(-1, 1) for _ in range(out.numel())], dtype=out.dtype,
                     device=out.device.plain()).reshape(out.shape)
    (out * weights.to(out.device)).sum().backward()
    for k, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        analytic = x.grad.flatten().tolist() if x.grad is not None else [0.0] * x.numel()
        values = x.detach().flatten().tolist()
        for i in range(len(values)):
            sides = []
            for step in (eps, -eps):
                shifted = list(values)
                shifted[i] += step
                probe = list(inputs)
                probe[k] = tensor(shifted, dtype=x.dtype, device=x.device).reshape(x.shape)
                with no_grad():
                    sides.append((fn(*probe).detach() * weights.to(out.device)).sum().item())
            numeric = (sides[0] - sides[1]) / (2 * eps)
            if abs(numeric - analytic[i]) > atol + rtol * abs(numeric):
                raise ArgumentError(f"gradcheck: input {k}, element {i}: the backward gives "
                                    f"{analytic[i]:.6g}, finite differences {numeric:.6g}")
    return True
