"""Scaled dot-product attention, PyTorch's reference semantics in a few tensor ops."""

from __future__ import annotations

import math

from ... import ArgumentError, ShapeError, Tensor, ones, where
from .activation import softmax
from .dropout import dropout


def _repeat_heads(x: Tensor, times: int) -> Tensor:
    """Each head (dim -3) repeated `times` times in place (repeat_interleave)."""
    if times == 1:
        return x
    heads, rest = x.shape[-3], x.shape[-2:]
    wide = x.unsqueeze(-3).expand(x.shape[:-3] + (heads, times) + rest)
    return wide.reshape(x.shape[:-3] + (heads * times,) + rest)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` for query (..., L, E), key
    (..., S, E) and value (..., S, Ev); leading dims broadcast.

    - `attn_mask`: bool (True means "may attend") or float (added to the scores), broadcast
      to (..., L, S).
    - `is_causal`: position i attends to positions j <= i (the top-left aligned lower
      triangle); not combined with `attn_mask`.
    - `scale` defaults to ``1 / sqrt(E)``; `dropout_p` drops attention weights.
    - `enable_gqa`: key and value may have fewer heads (dim -3) than query; each is shared
      by ``query_heads / kv_heads`` consecutive query heads.

    A query that may attend to nothing gets zeros (not NaN), as in PyTorch.

    >>> import pyburn, pyburn.nn.functional as F
    >>> q = k = v = pyburn.ones(1, 2, 4, device="flex")
    >>> F.scaled_dot_product_attention(q, k, v).shape
    (1, 2, 4)
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.ndim < 2:
            raise ShapeError(f"{op}: {name} must have at least 2 dims, got "
                             f"{getattr(t, 'shape', t)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{op}: query {query.shape}, key {key.shape} and value {value.shape} "
                         "do not fit (query and key share E, key and value share S)")
    if is_causal and attn_mask is not None:
        raise ArgumentError(f"{op}: pass either attn_mask or is_causal=True, not both")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        if query.shape[-3] % key.shape[-3] or key.shape[-3] != value.shape[-3]:
            raise ShapeError(f"{op}: {query.shape[-3]} query heads cannot share "
                             f"{key.shape[-3]} key / {value.shape[-3]} value heads")
        key = _repeat_heads(key, query.shape[-3] // key.shape[-3])
        value = _repeat_heads(value, query.shape[-3] // value.shape[-3])
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.mT) * factor
    if is_causal:
        attn_mask = ones(length, source, dtype="bool", device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype.is_bool:
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    if attn_mask is None:  # no row is masked out: the plain softmax (one call on cpu)
        weights = softmax(scores, -1)
    else:
        top = scores.amax(-1, keepdim=True).detach()  # a shift the softmax does not depend on
        e = (scores - where(top.isfinite(), top, 0.0)).exp()
        total = e.sum(-1, keepdim=True)
        # a row with no allowed position sums to 0: divide by 1 there, so it gives zeros and
        # its gradient stays finite
        weights = e / where(total > 0, total, 1.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value
