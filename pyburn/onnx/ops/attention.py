"""Attention (opset 23/24: 3-d or 4-d inputs, grouped-query heads, KV cache, masks,
causal, softcap, scale, the qk_matmul_output modes), RotaryEmbedding (opset 23) and
LinearAttention (opset 27: linear, gated, delta and gated-delta recurrences)."""

from __future__ import annotations

import math

from ... import Tensor, arange, cat, float32, stack, where, zeros
from ...nn import functional as F
from ..registry import check, onnx_op

_FLOATS = {1: "float32", 10: "float16", 11: "float64", 16: "float32"}


def _heads(t: Tensor, heads: int, name: str) -> Tensor:
    """(B, S, heads * d) -> (B, heads, S, d)."""
    check(heads > 0 and t.shape[2] % heads == 0,
          f"Attention: 3-d {name} {t.shape} needs a head count dividing its last dim, got "
          f"{heads}")
    b, s, hidden = t.shape
    return t.reshape(b, s, heads, hidden // heads).transpose(1, 2)


def _repeat_heads(t: Tensor, times: int) -> Tensor:
    """Each head (dim 1) repeated `times` times in place: h0, h0, h1, h1, ..."""
    if times == 1:
        return t
    b, h, s, d = t.shape
    return t.unsqueeze(2).expand(b, h, times, s, d).reshape(b, h * times, s, d)


def _bias(q_len: int, total: int, past: int, attn_mask: Tensor | None, is_causal: int,
          nonpad_kv_seqlen: Tensor | None, like: Tensor) -> Tensor | None:
    """The additive bias (0 or -inf, plus a float mask) broadcast against the scores
    (B, H, q_len, total), or None when nothing is masked."""
    bias = None
    if attn_mask is not None:
        short = total - attn_mask.shape[-1]
        if attn_mask.dtype.is_bool:
            mask = where(attn_mask, 0.0, float("-inf")).cast(like.dtype)
        else:
            mask = attn_mask.cast(like.dtype)
        if short > 0:  # a mask shorter than the cache masks the rest out
            fill = zeros(mask.shape[:-1] + (short,), dtype=like.dtype, device=like.device)
            mask = cat([mask, fill + float("-inf")], -1)
        bias = mask
    if is_causal:
        rows = arange(q_len, device=like.device).reshape(q_len, 1) + past
        allowed = arange(total, device=like.device).reshape(1, total) <= rows
        causal = where(allowed, 0.0, float("-inf")).cast(like.dtype)
        bias = causal if bias is None else bias + causal
    if nonpad_kv_seqlen is not None:
        b = nonpad_kv_seqlen.shape[0]
        seen = arange(total, device=like.device).reshape(1, total) < nonpad_kv_seqlen.reshape(b, 1)
        padding = where(seen, 0.0, float("-inf")).cast(like.dtype).reshape(b, 1, 1, total)
        bias = padding if bias is None else bias + padding
    return bias


@onnx_op("Attention", since=23)
def attention(q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None = None,
              past_key: Tensor | None = None, past_value: Tensor | None = None,
              nonpad_kv_seqlen: Tensor | None = None, *, is_causal: int = 0,
              kv_num_heads: int = 0, q_num_heads: int = 0, qk_matmul_output_mode: int = 0,
              scale: float | None = None, softcap: float = 0.0,
              softmax_precision: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Attention: ``softmax(softcap(Q K^T * scale) + bias) V`` for 4-d (B, H, S, d) or 3-d
    (B, S, H * d) inputs, with past_key/past_value prepended to K/V (returned as
    present_key/present_value), grouped-query heads, a bool or float attn_mask (padded
    with -inf up to the cache length), is_causal (offset by the past length) and
    nonpad_kv_seqlen. Outputs (Y, present_key, present_value, qk_matmul_output), the last
    as qk_matmul_output_mode says: 0 the scaled Q K^T, 1 after softcap, 2 after the bias,
    3 after the softmax."""
    op = "Attention"
    three_d = q.ndim == 3
    check(q.ndim in (3, 4) and k.ndim == q.ndim and v.ndim == q.ndim,
          f"{op}: Q, K and V must all be 3-d or 4-d, got {q.shape}, {k.shape}, {v.shape}")
    batch, q_len = q.shape[0], q.shape[-2] if not three_d else q.shape[1]
    if three_d:
        check(q_num_heads > 0 and kv_num_heads > 0,
              f"{op}: 3-d inputs need q_num_heads and kv_num_heads")
        q, k, v = _heads(q, q_num_heads, "Q"), _heads(k, kv_num_heads, "K"), _heads(
            v, kv_num_heads, "V")
    present_key = k if past_key is None else cat([past_key, k], 2)
    present_value = v if past_value is None else cat([past_value, v], 2)
    past = 0 if past_key is None else past_key.shape[2]
    heads, kv_heads = q.shape[1], present_key.shape[1]
    check(heads % kv_heads == 0 and present_value.shape[1] == kv_heads,
          f"{op}: {heads} query heads cannot share {kv_heads} key / "
          f"{present_value.shape[1]} value heads")
    keys = _repeat_heads(present_key, heads // kv_heads)
    values = _repeat_heads(present_value, heads // kv_heads)
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    root = math.sqrt(factor)
    raw = (q * root) @ (keys * root).mT
    capped = (raw / softcap).tanh() * softcap if softcap > 0 else raw
    bias = _bias(q_len, keys.shape[2], past, attn_mask, is_causal, nonpad_kv_seqlen, raw)
    biased = capped if bias is None else capped + bias
    scores = biased.cast(_FLOATS[softmax_precision]) if softmax_precision else biased
    probs = F.softmax(scores, dim=-1).cast(q.dtype)
    y = probs @ values
    if three_d:
        y = y.transpose(1, 2).reshape(batch, q_len, -1)
    qk_output = (raw, capped, biased, probs)[qk_matmul_output_mode]
    return y, present_key, present_value, qk_output


@onnx_op("RotaryEmbedding", since=23)
def rotary_embedding(x: Tensor, cos_cache: Tensor, sin_cache: Tensor,
                     position_ids: Tensor | None = None, *, interleaved: int = 0,
                     num_heads: int = 0, rotary_embedding_dim: int = 0) -> Tensor:
    """RotaryEmbedding: the first rotary_embedding_dim (default all) features of each head
    of x (B, H, S, d) or (B, S, H * d) rotated by the angles whose cos/sin the caches hold
    (indexed by position_ids (B, S), else already (B, S, rd / 2)); pairs are the two halves,
    or adjacent features when interleaved."""
    op = "RotaryEmbedding"
    check(x.ndim in (3, 4), f"{op}: input must be 3-d or 4-d, got shape {x.shape}")
    if x.ndim == 4:
        t = x.transpose(1, 2)  # (B, S, H, d)
    else:
        check(num_heads > 0 and x.shape[2] % num_heads == 0,
              f"{op}: a 3-d input {x.shape} needs num_heads dividing its last dim")
        t = x.reshape(x.shape[0], x.shape[1], num_heads, x.shape[2] // num_heads)
    b, s, _, d = t.shape
    rd = rotary_embedding_dim or d
    half = rd // 2
    if position_ids is not None:
        ids = position_ids.reshape(-1)
        cos = cos_cache.index_select(0, ids).reshape(b, s, -1)
        sin = sin_cache.index_select(0, ids).reshape(b, s, -1)
    else:
        cos, sin = cos_cache, sin_cache
    check(cos.shape[-1] == half and sin.shape[-1] == half,
          f"{op}: the caches' last dim ({cos.shape[-1]}) must be rotary_embedding_dim / 2 = "
          f"{half}")
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    rotated, kept = t[..., :rd], t[..., rd:]
    if interleaved:
        x1, x2 = rotated[..., 0::2], rotated[..., 1::2]
    else:
        x1, x2 = rotated[..., :half], rotated[..., half:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        rotated = stack([real, imag], -1).reshape(rotated.shape)
    else:
        rotated = cat([real, imag], -1)
    out = cat([rotated, kept], -1) if rd < d else rotated
    return out.reshape(x.shape) if x.ndim == 3 else out.transpose(1, 2)



_UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


@onnx_op("LinearAttention", since=27)
def linear_attention(query: Tensor, key: Tensor, value: Tensor,
                     past_state: Tensor | None = None, decay: Tensor | None = None,
                     beta: Tensor | None = None, *, chunk_size: int = 0,
                     kv_num_heads: int = 0, q_num_heads: int = 0, scale: float = 0.0,
                     update_rule: str = "gated_delta") -> tuple[Tensor, Tensor]:
    """LinearAttention: the recurrent state S (B, H_kv, d_k, d_v) updated token by token,
    ``S = exp(g) S`` (gated rules) then ``S += k (x) v`` with v replaced by
    ``beta (v - S^T k)`` (delta rules), and the output ``scale * q^T S`` (query heads
    sharing KV heads in groups). Inputs are 3-d packed (B, T, H * d); computed in float32;
    returns (output, present_state). chunk_size is a speed hint and changes nothing."""
    del chunk_size
    op = "LinearAttention"
    check(update_rule in _UPDATE_RULES,
          f"{op}: update_rule must be one of {', '.join(_UPDATE_RULES)}, got {update_rule!r}")
    gated, delta = "gated" in update_rule, "delta" in update_rule
    check(gated == (decay is not None) and delta == (beta is not None),
          f"{op}: update_rule {update_rule!r} {'needs' if gated else 'forbids'} decay and "
          f"{'needs' if delta else 'forbids'} beta")
    check(q_num_heads > 0 and kv_num_heads > 0 and q_num_heads % kv_num_heads == 0,
          f"{op}: q_num_heads ({q_num_heads}) must be a positive multiple of kv_num_heads "
          f"({kv_num_heads})")
    check(query.ndim == 3 and key.ndim == 3 and value.ndim == 3,
          f"{op}: query, key and value must be 3-d (B, T, H * d)")
    b, steps = query.shape[:2]
    q = _heads(query.cast(float32), q_num_heads, "query")
    k = _heads(key.cast(float32), kv_num_heads, "key")
    v = _heads(value.cast(float32), kv_num_heads, "value")
    d_k, d_v = k.shape[-1], v.shape[-1]
    gates = None
    if decay is not None:
        per_head = decay.shape[-1] == kv_num_heads
        check(decay.ndim == 3 and decay.shape[-1] in (kv_num_heads, kv_num_heads * d_k),
              f"{op}: decay {decay.shape} must be (B, T, H_kv) or (B, T, H_kv * d_k)")
        gates = decay.cast(float32).reshape(b, steps, kv_num_heads, 1 if per_head else d_k)
        gates = gates.transpose(1, 2).exp()  # (B, H_kv, T, 1 or d_k)
    rates = None
    if beta is not None:
        check(beta.ndim == 3 and beta.shape[-1] in (kv_num_heads, 1),
              f"{op}: beta {beta.shape} must be (B, T, H_kv) or (B, T, 1)")
        rates = beta.cast(float32).transpose(1, 2).unsqueeze(-1)  # (B, H_kv or 1, T, 1)
    if past_state is not None:
        check(past_state.shape == (b, kv_num_heads, d_k, d_v),
              f"{op}: past_state {past_state.shape} must be {(b, kv_num_heads, d_k, d_v)}")
        state = past_state.cast(float32)
    else:
        state = zeros(b, kv_num_heads, d_k, d_v, device=query.device)
    factor = scale if scale else 1.0 / math.sqrt(q.shape[-1])
    outputs = []
    for t in range(steps):
        k_t, v_t = k[:, :, t], v[:, :, t]
        if gates is not None:
            state = state * gates[:, :, t].unsqueeze(-1)
        if rates is not None:
            retrieved = (k_t.unsqueeze(-2) @ state).squeeze(-2)
            v_t = rates[:, :, t] * (v_t - retrieved)
        state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
        shared = _repeat_heads(state, q_num_heads // kv_num_heads)
        outputs.append((q[:, :, t].unsqueeze(-2) @ shared).squeeze(-2) * factor)
    out = stack(outputs, 2).transpose(1, 2).reshape(b, steps, -1)
    held = past_state.dtype if past_state is not None else query.dtype
    return out.cast(query.dtype), state.cast(held)
