"""`MultiheadAttention` with PyTorch's constructor, parameters, masks and results.

Parameters match PyTorch's state_dict: ``in_proj_weight`` (3E, E) stacking the query, key and
value projections (or ``q_proj_weight``, ``k_proj_weight`` (E, kdim), ``v_proj_weight``
(E, vdim) when kdim or vdim differ from embed_dim), ``in_proj_bias`` (3E,), ``out_proj``
(a `Linear`), and with ``add_bias_kv`` ``bias_k``/``bias_v`` (1, 1, E).

Masks follow PyTorch: a bool mask marks with True the positions that may NOT be attended to
(the opposite of ``F.scaled_dot_product_attention``'s bool mask), a float mask is added to
the attention scores. Both kinds are turned into one additive mask here.
"""

from __future__ import annotations

import math
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..ops.creation import ones, zeros
from ..ops.movement import cat
from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import empty_parameter


def _additive(mask: Tensor, dtype: Any, name: str) -> Tensor:
    """A bool mask (True = masked) as 0 / -inf, or a float mask in `dtype`."""
    if not isinstance(mask, Tensor):
        raise ArgumentError(f"MultiheadAttention: {name} must be a tensor, got "
                            f"{type(mask).__name__}")
    if mask.dtype.is_bool:
        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)
    if not mask.dtype.is_floating_point:
        raise DTypeError(f"MultiheadAttention: {name} must be bool or floating point, got "
                         f"{mask.dtype.name}")
    return mask.cast(dtype)


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of ``embed_dim // num_heads`` features each, as in
    "Attention is all you need": ``out_proj(concat_h softmax(q_h k_h^T / sqrt(d) + mask)
    v_h)`` with q, k, v the projections of query, key and value.

    Shapes (L target length, S source length, N batch, E embed_dim): query (L, N, E), key
    (S, N, kdim), value (S, N, vdim); (N, L, E) etc. with ``batch_first``; or unbatched
    (L, E), (S, kdim), (S, vdim).

    >>> import pyburn
    >>> mha = pyburn.nn.MultiheadAttention(8, 2, batch_first=True, device="flex")
    >>> x = pyburn.ones(3, 5, 8, device="flex")
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None):
        super().__init__()
        for name, value in (("embed_dim", embed_dim), ("num_heads", num_heads), ("kdim", kdim),
                            ("vdim", vdim)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value <= 0):
                raise ArgumentError(f"MultiheadAttention: {name} must be a positive int, got "
                                    f"{value!r}")
        if embed_dim % num_heads:
            raise ArgumentError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible "
                                f"by num_heads ({num_heads})")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or \
                not 0.0 <= dropout <= 1.0:
            raise ArgumentError(f"MultiheadAttention: dropout must be a probability in [0, 1], "
                                f"got {dropout!r}")
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = float(dropout)
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn
        e = embed_dim
        # registered in PyTorch's order, absent ones as None, so the state_dicts line up
        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty_parameter((3 * e, e), device, dtype)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty_parameter((e, e), device, dtype)
            self.k_proj_weight = empty_parameter((e, self.kdim), device, dtype)
            self.v_proj_weight = empty_parameter((e, self.vdim), device, dtype)
            self.register_parameter("in_proj_weight", None)
        self.register_parameter("in_proj_bias",
                                empty_parameter((3 * e,), device, dtype) if bias else None)
        self.out_proj = Linear(e, e, bias=bias, device=device, dtype=dtype)
        for name in ("bias_k", "bias_v"):
            self.register_parameter(name, empty_parameter((1, 1, e), device, dtype)
                                    if add_bias_kv else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: Glorot-uniform projections (the three of ``in_proj_weight``
        together), zero biases, Glorot-normal ``bias_k``/``bias_v``; ``out_proj.weight``
        keeps `Linear`'s init."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query: Tensor, key: Tensor, value: Tensor,
                 self_attention: bool) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v: the input projections; one matmul for self-attention."""
        b = self.in_proj_bias
        biases = (None, None, None) if b is None else b.chunk(3)
        if self._qkv_same_embed_dim:
            if self_attention:
                q, k, v = F.linear(query, self.in_proj_weight, b).chunk(3, -1)
                return q, k, v
            weights = self.in_proj_weight.chunk(3)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        q, k, v = (F.linear(x, w, bias)
                   for x, w, bias in zip((query, key, value), weights, biases))
        return q, k, v

    def _mask(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool,
              shape: tuple[int, int, int, int], extra: int, dtype: Any,
              device: Any) -> Tensor | None:
        """One additive mask broadcastable to (N, H, L, S + extra), or None: `attn_mask`
        ((L, S) or (N * H, L, S)) plus `key_padding_mask` ((N, S)), padded with `extra`
        allowed columns for the added bias_k and zero-attention positions."""
        n, h, length, source = shape
        if attn_mask is None and is_causal:
            attn_mask = ones(length, source, dtype="bool", device=device).triu(1)
        merged = None
        if attn_mask is not None:
            if attn_mask.shape == (length, source):
                merged = _additive(attn_mask, dtype, "attn_mask")
            elif attn_mask.shape == (n * h, length, source):
                merged = _additive(attn_mask, dtype, "attn_mask").reshape(n, h, length, source)
            else:
                raise ShapeError(f"MultiheadAttention: attn_mask must have shape "
                                 f"{(length, source)} or {(n * h, length, source)}, got "
                                 f"{attn_mask.shape}")
        if key_padding_mask is not None:
            if key_padding_mask.shape != (n, source):
                raise ShapeError(f"MultiheadAttention: key_padding_mask must have shape "
                                 f"{(n, source)} (batch, source length; (S,) unbatched), "
                                 f"got {key_padding_mask.shape}")
            padding = _additive(key_padding_mask, dtype, "key_padding_mask")
            padding = padding.reshape(n, 1, 1, source)
            merged = padding if merged is None else merged + padding
        if merged is not None and extra:
            merged = F.pad(merged, (0, extra))
        return merged

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from `query` to `key`/`value`; returns ``(output, weights)``.

        - `key_padding_mask` (N, S) (or (S,) unbatched): True (or -inf) marks source
          positions to ignore, per batch element.
        - `attn_mask` (L, S) or (N * num_heads, L, S): True (or -inf) forbids a pair.
        - `is_causal`: forbid attending to later positions. With `attn_mask` given, that
          mask is used (PyTorch treats the flag as a hint about it); without one, the causal
          mask is made here (PyTorch asks for it).
        - `need_weights`: also return the attention weights (after dropout), averaged over
          heads, (N, L, S), or per head, (N, num_heads, L, S), if not
          `average_attn_weights`; otherwise weights is None and the faster
          ``F.scaled_dot_product_attention`` computes the output.

        A query position with nothing to attend to gives NaN when weights are returned and
        zeros otherwise, as in PyTorch.
        """
        op = "MultiheadAttention"
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor) or t.ndim not in (2, 3):
                raise ShapeError(f"{op}: {name} must be 3-d (batched) or 2-d (unbatched), got "
                                 f"{getattr(t, 'shape', t)}")
        if not query.ndim == key.ndim == value.ndim:
            raise ShapeError(f"{op}: query {query.shape}, key {key.shape} and value "
                             f"{value.shape} must all be batched or all unbatched")
        self_attention = query is key and key is value
        batched = query.ndim == 3
        if not batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        length, n, e = query.shape
        source = key.shape[0]
        if e != self.embed_dim or key.shape != (source, n, self.kdim) or \
                value.shape != (source, n, self.vdim):
            raise ShapeError(f"{op}: query, key and value must be (L, N, {self.embed_dim}), "
                             f"(S, N, {self.kdim}), (S, N, {self.vdim}) (batch first: N "
                             f"leads), got {query.shape}, {key.shape}, {value.shape} "
                             f"(time-major)")
        q, k, v = self._project(query, key, value, self_attention)
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(1, n, e)])
            v = cat([v, self.bias_v.expand(1, n, e)])
        h, d = self.num_heads, self.head_dim
        q, k, v = (t.reshape(t.shape[0], n, h, d).permute(1, 2, 0, 3) for t in (q, k, v))
        if self.add_zero_attn:
            k = cat([k, zeros(n, h, 1, d, dtype=k.dtype, device=k.device)], 2)
            v = cat([v, zeros(n, h, 1, d, dtype=v.dtype, device=v.device)], 2)
        extra = k.shape[2] - source
        mask = self._mask(attn_mask, key_padding_mask, is_causal, (n, h, length, source), extra,
                          q.dtype, q.device)
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * (1.0 / math.sqrt(d))) @ k.mT
            weights = F.softmax(scores if mask is None else scores + mask, -1)
            weights = F.dropout(weights, p)
            out = weights @ v
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(length, n, e))
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
