"""Distances and similarities between batches of vectors."""

from __future__ import annotations

from ... import ArgumentError, Tensor
from ...shape import broadcast_shapes, norm_dim


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """p-norm of ``x1 - x2 + eps`` over the last dim (x1 and x2 broadcast); `eps` keeps the
    norm's gradient finite when the vectors are equal."""
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise ArgumentError("pairwise_distance expects two tensors")
    diff = x1 - x2 + eps
    if diff.ndim == 0:
        return diff.abs() if p else (diff != 0).cast(diff.dtype)
    return diff.norm(p, dim=-1, keepdim=keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(|x1|, eps) * max(|x2|, eps))`` along `dim` (x1 and x2 broadcast).

    >>> import pyburn, pyburn.nn.functional as F
    >>> a = pyburn.tensor([[1.0, 0.0]], device="flex")
    >>> F.cosine_similarity(a, a).tolist()
    [1.0]
    """
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise ArgumentError("cosine_similarity expects two tensors")
    shape = broadcast_shapes(x1.shape, x2.shape)  # dim counts in the broadcast shape
    a = (x1 if x1.is_floating_point() else x1.float()).broadcast_to(shape)
    b = x2.broadcast_to(shape)
    d = norm_dim(dim, len(shape))
    # each vector is divided by its own clamped norm before the product, so the result
    # stays in [-1, 1] and neither norm can underflow to zero in a product of the two
    a = a / a.norm(2, dim=d, keepdim=True).clamp(min=eps)
    b = b / b.norm(2, dim=d, keepdim=True).clamp(min=eps)
    return (a * b).sum(d)
