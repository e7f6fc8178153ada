"""Embedding lookup (and `one_hot`, re-exported from the tensor API)."""

from __future__ import annotations

from ... import (
    ArgumentError,
    DTypeError,
    IndexOutOfRange,
    ShapeError,
    Tensor,
    no_grad,
    one_hot,
    where,
    zeros,
)

__all__ = ["embedding", "one_hot"]


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` (num_embeddings, dim) picked by the integer `input` (any shape):
    the result has shape ``input.shape + (dim,)``.

    - `padding_idx`: that row gets no gradient (its value is looked up as usual).
    - `max_norm`: as in PyTorch, the looked-up rows of `weight` whose `norm_type`-norm
      exceeds it are rescaled to that norm *in place* (``weight.assign_``, unrecorded)
      before the lookup.
    - `scale_grad_by_freq`: each row's gradient is divided by how often it occurs in
      `input`.
    - `sparse` is accepted for PyTorch compatibility; gradients are always dense.

    >>> import pyburn, pyburn.nn.functional as F
    >>> w = pyburn.tensor([[0.0, 0.0], [1.0, 2.0]], device="flex")
    >>> F.embedding(pyburn.tensor([1, 0, 1], device="flex"), w).tolist()
    [[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]]
    """
    if not isinstance(input, Tensor) or not input.dtype.is_integer:
        got = input.dtype.name if isinstance(input, Tensor) else type(input).__name__
        raise DTypeError(f"embedding: input must be an integer tensor of indices, got {got}")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-d (num_embeddings, dim), got "
                         f"{getattr(weight, 'shape', weight)}")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise ArgumentError(f"embedding: padding_idx {padding_idx} is out of range for "
                                f"{rows} embeddings")
        padding_idx %= rows
    flat = input.reshape(input.numel())
    if flat.numel() and flat.amin().item() < 0:  # index_select would wrap them around
        raise IndexOutOfRange(f"embedding: index {flat.amin().item()} is negative; indices "
                              f"must be in [0, {rows})")
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    out = weight.index_select(0, flat)
    if scale_grad_by_freq and out.requires_grad:
        counts = zeros(rows, dtype=weight.dtype, device=weight.device).scatter_add(
            0, flat, (flat * 0 + 1).cast(weight.dtype))
        scale = (1.0 / counts.take(flat)).unsqueeze(1)
        # the value stays exactly `out`; only the gradient picks up the scale
        out = out.detach() + (out - out.detach()) * scale
    if padding_idx is not None and out.requires_grad:
        out = where((flat == padding_idx).unsqueeze(1), out.detach(), out)
    return out.reshape(input.shape + (weight.shape[1],))


def _renorm_rows(weight: Tensor, flat: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescale, in place, the rows of weight named in `flat` whose norm exceeds max_norm."""
    with no_grad():
        used = zeros(weight.shape[0], dtype=weight.dtype, device=weight.device).scatter(
            0, flat, 1.0) > 0
        norms = weight.norm(norm_type, dim=1)
        scale = where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.assign_(weight * scale.unsqueeze(1))
