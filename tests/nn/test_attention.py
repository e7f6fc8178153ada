"""MultiheadAttention against PyTorch: parameter layout for every constructor option, masks of
both kinds and shapes, attention weights, batch_first both ways, unbatched inputs,
gradients, init and errors."""

from __future__ import annotations

import math
import zlib

import pytest

import pyburn
from pyburn import nn

from .sequence_twins import Const, check_sequence_twin, np, torch

E, HEADS, L, S, N = 8, 2, 3, 5, 2  # embed_dim, heads, target and source length, batch


def _rng(key: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(key.encode()))


def _inputs(key: str, options: dict, length: int = L, source: int = S) -> list[np.ndarray]:
    """query, key, value for `options` (kdim, vdim, batch_first)."""
    rng = _rng(key)
    sizes = (E, options.get("kdim") or E, options.get("vdim") or E)
    lengths = (length, source, source)
    if options.get("batch_first"):
        shapes = [(N, n, d) for n, d in zip(lengths, sizes)]
    else:
        shapes = [(n, N, d) for n, d in zip(lengths, sizes)]
    return [rng.uniform(-1.5, 1.5, s).astype(np.float32) for s in shapes]


def _ids(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items()) or "default"


CONSTRUCTOR = [
    dict(), dict(batch_first=True), dict(bias=False), dict(kdim=3, vdim=5),
    dict(add_bias_kv=True), dict(add_zero_attn=True), dict(num_heads=1), dict(num_heads=4),
    dict(add_bias_kv=True, add_zero_attn=True, kdim=3, vdim=5, batch_first=True, bias=False),
]
WEIGHTS = [dict(need_weights=True), dict(need_weights=True, average_attn_weights=False),
           dict(need_weights=False)]


def _pair(options: dict, device: pyburn.Device) -> tuple[nn.MultiheadAttention, object]:
    options = dict(options)
    heads = options.pop("num_heads", HEADS)
    return (nn.MultiheadAttention(E, heads, device=device, **options),
            torch.nn.MultiheadAttention(E, heads, **options))


@pytest.mark.parametrize("call", WEIGHTS, ids=_ids)
@pytest.mark.parametrize("options", CONSTRUCTOR, ids=_ids)
def test_cross_attention(device, options, call):
    """Separate query/key/value, with a bool key padding mask (source 0 never padded)."""
    ours, theirs = _pair(options, device)
    padding = _rng("kpm").random((N, S)) < 0.4
    padding[:, 0] = False
    check_sequence_twin(device, ours, theirs, _inputs("cross", options),
                        dict(key_padding_mask=padding, **call))


def _bool_mask(key: str, *shape: int) -> np.ndarray:
    """True (masked) at random, never in source column 0, so every query has a key."""
    mask = _rng(key).random(shape) < 0.4
    mask[..., 0] = False
    return mask


def _float_mask(key: str, *shape: int) -> np.ndarray:
    """Finite values in [-2, 1) and some -inf, never in source column 0."""
    rng = _rng(key)
    mask = rng.uniform(-2, 1, shape)
    mask[rng.random(shape) < 0.3] = -np.inf
    mask[..., 0] = 0.0
    return mask.astype(np.float32)


MASKS = {
    "padding-bool": lambda: dict(key_padding_mask=_bool_mask("p", N, L)),
    "padding-float": lambda: dict(key_padding_mask=Const(_float_mask("pf", N, L))),
    "attn-bool-2d": lambda: dict(attn_mask=_bool_mask("a", L, L)),
    "attn-float-2d": lambda: dict(attn_mask=Const(_float_mask("af", L, L))),
    "attn-bool-3d": lambda: dict(attn_mask=_bool_mask("a3", N * HEADS, L, L)),
    "attn-float-3d": lambda: dict(attn_mask=Const(_float_mask("af3", N * HEADS, L, L))),
    "both-bool": lambda: dict(attn_mask=_bool_mask("b", L, L),
                              key_padding_mask=_bool_mask("bp", N, L)),
    "float-attn-bool-padding": lambda: dict(attn_mask=Const(_float_mask("m", L, L)),
                                            key_padding_mask=_bool_mask("mp", N, L)),
    "causal": lambda: dict(attn_mask=np.triu(np.ones((L, L), dtype=bool), 1), is_causal=True),
}


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "no-weights"])
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-major", "batch-first"])
def test_self_attention_masks(device, batch_first, mask, need_weights):
    """query is key is value (the packed projection path) under every kind of mask."""
    ours, theirs = _pair(dict(batch_first=batch_first), device)
    x = _inputs("self", dict(batch_first=batch_first), source=L)[0]
    check_sequence_twin(device, ours, theirs, [x, x, x],
                        dict(need_weights=need_weights, **MASKS[mask]()))


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "no-weights"])
def test_masks_with_bias_kv_and_zero_attn(device, need_weights):
    """The masks grow by the added key positions, which stay unmasked."""
    options = dict(add_bias_kv=True, add_zero_attn=True)
    ours, theirs = _pair(options, device)
    masks = dict(attn_mask=_bool_mask("z", L, S), key_padding_mask=_bool_mask("zp", N, S))
    check_sequence_twin(device, ours, theirs, _inputs("zero", options),
                        dict(need_weights=need_weights, **masks))


@pytest.mark.parametrize("call", WEIGHTS, ids=_ids)
@pytest.mark.parametrize("masks", ["none", "padding", "attn-3d"])
def test_unbatched(device, masks, call):
    ours, theirs = _pair(dict(), device)
    q, k, v = (a[:, 0] for a in _inputs("unbatched", dict()))
    extra = {"none": {}, "padding": dict(key_padding_mask=_bool_mask("u", S)),
             "attn-3d": dict(attn_mask=_bool_mask("u3", HEADS, L, S))}[masks]
    check_sequence_twin(device, ours, theirs, [q, k, v], dict(**extra, **call))


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "no-weights"])
def test_fully_masked_query(device, need_weights):
    """A query with nothing to attend to: NaN when weights are returned, zeros through the
    scaled-dot-product path, as in PyTorch."""
    ours, theirs = _pair(dict(), device)
    q, k, v = _inputs("empty", dict())
    padding = np.zeros((N, S), dtype=bool)
    padding[1] = True
    check_sequence_twin(device, ours, theirs, [q, k, v],
                        dict(key_padding_mask=padding, need_weights=need_weights), grad=False)


@pytest.mark.parametrize("need_weights", [True, False], ids=["weights", "no-weights"])
def test_is_causal_alone_makes_the_mask(device, need_weights):
    """pyburn builds the causal mask when is_causal comes without attn_mask (PyTorch asks
    for the mask): the same result as passing it."""
    mha = nn.MultiheadAttention(E, HEADS, batch_first=True, device=device)
    x = pyburn.tensor(_inputs("causal", dict(batch_first=True), source=L)[0], device=device)
    mask = pyburn.ones(L, L, dtype=pyburn.bool, device=device).triu(1)
    alone = mha(x, x, x, is_causal=True, need_weights=need_weights)
    given = mha(x, x, x, attn_mask=mask, need_weights=need_weights)
    np.testing.assert_allclose(alone[0].numpy(), given[0].numpy(), rtol=1e-6, atol=1e-7)
    # a later position never changes an earlier output
    changed = pyburn.cat([x[:, :2], x[:, 2:] * 3.0], 1)
    later = mha(changed, changed, changed, is_causal=True, need_weights=need_weights)[0]
    np.testing.assert_allclose(later[:, :2].numpy(), alone[0][:, :2].numpy(), rtol=1e-6,
                               atol=1e-7)


def test_attention_dropout_in_training(device):
    mha = nn.MultiheadAttention(E, HEADS, dropout=0.5, device=device)
    q, k, v = (pyburn.tensor(a, device=device) for a in _inputs("drop", dict()))
    runs = []
    for _ in range(2):
        pyburn.manual_seed(2)
        runs.append([t.numpy() for t in mha(q, k, v)])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    evaluated = mha.eval()(q, k, v)
    assert not np.allclose(runs[0][0], evaluated[0].numpy())
    # the returned weights are the dropped ones: each row's kept weights scaled by 2
    assert not np.allclose(runs[0][1].sum(-1), 1.0)
    np.testing.assert_allclose(evaluated[1].numpy().sum(-1), 1.0, rtol=1e-5)


def test_default_init(device):
    pyburn.manual_seed(4)
    mha = nn.MultiheadAttention(64, 4, add_bias_kv=True, device=device)
    bound = math.sqrt(6 / (64 + 3 * 64))  # Glorot on the stacked (3E, E) matrix
    w = mha.in_proj_weight.numpy()
    assert np.abs(w).max() <= bound and abs(w.std() / (bound / math.sqrt(3)) - 1) < 0.03
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    assert np.abs(mha.out_proj.weight.numpy()).max() <= 1 / math.sqrt(64)
    assert mha.bias_k.shape == (1, 1, 64) and mha.bias_k.numpy().any()
    separate = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, device=device)
    assert separate.in_proj_weight is None and separate.k_proj_weight.shape == (8, 3)
    assert np.abs(separate.v_proj_weight.numpy()).max() <= math.sqrt(6 / (8 + 5))


def test_errors(device):
    mha = nn.MultiheadAttention(E, HEADS, device=device)
    q, k, v = (pyburn.tensor(a, device=device) for a in _inputs("err", dict()))
    with pytest.raises(pyburn.ArgumentError, match="divisible"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(pyburn.ShapeError, match="query, key and value"):
        mha(q, k[:, :, :4], v)
    with pytest.raises(pyburn.ShapeError, match="all be batched"):
        mha(q[:, 0], k, v)
    with pytest.raises(pyburn.ShapeError, match="attn_mask must have shape"):
        mha(q, k, v, attn_mask=pyburn.zeros(L, S + 1, device=device))
    with pytest.raises(pyburn.ShapeError, match="key_padding_mask must have shape"):
        mha(q, k, v, key_padding_mask=pyburn.zeros(N, L, dtype=pyburn.bool, device=device))
    with pytest.raises(pyburn.DTypeError, match="bool or floating"):
        mha(q, k, v, attn_mask=pyburn.zeros(L, S, dtype=pyburn.int32, device=device))
