"""Attention and RotaryEmbedding against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node

RNG = np.random.default_rng(5)


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _qkv(three_d: bool, q_heads: int, kv_heads: int, q_len: int = 3,
         kv_len: int = 4) -> tuple[list[np.ndarray], dict]:
    b, d = 2, 4
    if three_d:
        return ([_f(b, q_len, q_heads * d), _f(b, kv_len, kv_heads * d),
                 _f(b, kv_len, kv_heads * 3)], {"q_num_heads": q_heads, "kv_num_heads": kv_heads})
    return [_f(b, q_heads, q_len, d), _f(b, kv_heads, kv_len, d), _f(b, kv_heads, kv_len, 3)], {}


VARIANTS = {
    "plain": {},
    "causal": {"is_causal": 1},
    "scaled": {"scale": 0.3},
    "softcap": {"softcap": 2.0},
}


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("heads", [(2, 2), (4, 2), (3, 1)])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_attention(dev: str, three_d: bool, heads: tuple[int, int], variant: str) -> None:
    inputs, attrs = _qkv(three_d, *heads)
    check_node("Attention", inputs, {**attrs, **VARIANTS[variant]}, opset=23, device=dev,
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mask", ["bool", "float", "short_float"])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_masks(dev: str, mask: str, causal: int) -> None:
    inputs, _ = _qkv(False, 2, 2)
    if mask == "bool":
        m = RNG.random((3, 4)) > 0.3
        m[:, 0] = True  # every query attends to something
    else:
        m = _f(2, 1, 3, 4 if mask == "float" else 3)
    if causal and mask == "bool":
        pytest.skip("onnx's reference turns a causal bool mask into NaNs")
    check_node("Attention", inputs + [m], {"is_causal": causal}, opset=23, device=dev,
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_cache_and_qk_output(dev: str, mode: int, causal: int) -> None:
    inputs, _ = _qkv(False, 4, 2, q_len=2, kv_len=2)
    past_k, past_v = _f(2, 2, 3, 4), _f(2, 2, 3, 3)
    mask = _f(2, 4, 2, 5)
    check_node("Attention", inputs + [mask, past_k, past_v],
               {"qk_matmul_output_mode": mode, "softcap": 3.0 if mode else 0.0,
                "is_causal": causal},
               opset=23, device=dev, outputs=4, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
def test_attention_nonpad_kv_seqlen(dev: str) -> None:
    inputs, _ = _qkv(False, 2, 2)
    # a batch-sized mask: onnx's reference cannot add the padding mask to a 2-d bias
    mask = _f(2, 1, 3, 4)
    check_node("Attention", inputs + [mask, None, None, np.array([4, 2], np.int64)], {},
               opset=24, device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("with_ids", [False, True])
def test_rotary_embedding(dev: str, three_d: bool, interleaved: int, rotary_dim: int,
                          with_ids: bool) -> None:
    b, s, h, d = 2, 3, 2, 6
    x = _f(b, s, h * d) if three_d else _f(b, h, s, d)
    half = (rotary_dim or d) // 2
    angles = RNG.random((8 if with_ids else 1, s if not with_ids else 1, half))
    if with_ids:
        angles = angles[:, 0]
        ids = RNG.integers(0, 8, (b, s)).astype(np.int64)
    else:
        angles = np.broadcast_to(angles, (b, s, half))
    inputs = [x, np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)]
    if with_ids:
        inputs.append(ids)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    if three_d:
        attrs["num_heads"] = h
    check_node("RotaryEmbedding", inputs, attrs, opset=23, device=dev, rtol=1e-5, atol=1e-6)
