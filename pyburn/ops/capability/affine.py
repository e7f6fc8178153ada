"""The affine map ``x @ w.T + b`` as one backend call: the "linear" capability."""

from __future__ import annotations

from typing import Any

from ..._tensor import Tensor, result
from ...shape import numel
from ...tape import Grads
from .record import Capability


def linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """The backend's ``x @ w.T + b``: x (..., in), w (out, in) and b (out,) or None give
    (..., out)."""
    handle = x.device.backend.linear(x._h, w._h, None if b is None else b._h)
    return result(handle, x.shape[:-1] + w.shape[:1], x.dtype, "linear",
                  (x, w) if b is None else (x, w, b))


def _linear_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """For ``x @ w.T + b``: ``g @ w`` for x, g's rows transposed times x's rows for w (one
    product over the batch dims, and (out, in) like w, so the optimizer's passes over w
    and its gradient run on one layout), g summed over the rows for b. As for matmul, only
    the inputs that require grad get theirs."""
    x, w, *bias = inputs

    def rows(t: Tensor) -> Tensor:
        return t if t.ndim == 2 else t.reshape(numel(t.shape[:-1]), t.shape[-1])

    grads = (g @ w if x.requires_grad else None,
             rows(g).mT @ rows(x) if w.requires_grad else None)
    if not bias:
        return grads
    lead = tuple(range(g.ndim - 1))
    return grads + ((g.sum(lead) if lead else g) if bias[0].requires_grad else None,)


LINEAR = Capability(
    "linear", ("linear",),
    """``linear(x, w, b)``: ``x @ w.T + b`` for x (..., in), w (out, in) and b (out,), or no
    bias where `b` is None; returns (..., out). x may be 1-d (a single row).""",
    "pyburn.nn.functional.linear",
    rules={"linear": _linear_rule}, onnx={"linear": "Gemm (MatMul and Add beyond 2-d)"})
