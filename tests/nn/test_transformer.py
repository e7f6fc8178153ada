"""Transformer layers, stacks and the whole Transformer against PyTorch: state_dict layout,
outputs for every option (post-/pre-norm, relu/gelu/callable activation, batch_first, bias),
masks as PyTorch takes them, gradients; deep copies; the causal mask helper."""

from __future__ import annotations

import itertools
import zlib

import pytest

import pyburn
import pyburn.nn.functional as F
from pyburn import nn

from .sequence_twins import PERMISSIVE, Const, check_sequence_twin, np, torch

D, HEADS, FF, S, T, N = 8, 2, 16, 5, 4, 2  # d_model, heads, feed-forward, src/tgt length, batch


# PyTorch's advice to use one mask type (pyburn takes mixed types without comment)
pytestmark = [pytest.mark.filterwarnings("ignore:Support for mismatched"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")]


def _floats(key: str, *shape: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{key}{shape}".encode()))
    return rng.uniform(-1.5, 1.5, shape).astype(np.float32)


def _seq(key: str, length: int, batch_first: bool) -> np.ndarray:
    return _floats(key, *((N, length, D) if batch_first else (length, N, D)))


def _ids(options: dict) -> str:
    return "-".join(f"{k}={getattr(v, '__name__', v)}" for k, v in options.items()) or "default"


def _grid(**axes: list) -> list[dict]:
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


LAYER_OPTIONS = _grid(norm_first=[False, True], activation=["relu", "gelu"],
                      batch_first=[False, True]) + [dict(bias=False), dict(layer_norm_eps=1e-3)]


def _causal(n: int) -> np.ndarray:
    """PyTorch's float causal mask: 0 on and below the diagonal, -inf above. Passed bare, it
    is a float input whose gradient is checked too; the stacks get it as a `Const`, because
    PyTorch's stacks recognise it as causal and drop it for their own (no gradient)."""
    return np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1)


def _padding(key: str, length: int) -> np.ndarray:
    """A bool key padding mask (True = padded) that keeps position 0 of every sequence."""
    mask = np.random.default_rng(zlib.crc32(key.encode())).random((N, length)) < 0.4
    mask[:, 0] = False
    return mask


def _encoder_layer(library, options: dict, device=None):
    kwargs = dict(dim_feedforward=FF, dropout=0.1, **options)
    if library is nn:
        kwargs["device"] = device
    return library.TransformerEncoderLayer(D, HEADS, **kwargs)


def _decoder_layer(library, options: dict, device=None):
    kwargs = dict(dim_feedforward=FF, dropout=0.1, **options)
    if library is nn:
        kwargs["device"] = device
    return library.TransformerDecoderLayer(D, HEADS, **kwargs)


@pytest.mark.parametrize("options", LAYER_OPTIONS, ids=_ids)
def test_encoder_layer(device, options):
    """With a causal float mask and a bool padding mask (eval mode: dropout inactive)."""
    src = _seq("src", S, options.get("batch_first", False))
    check_sequence_twin(device, _encoder_layer(nn, options, device),
                        _encoder_layer(torch.nn, options), [src],
                        dict(src_mask=_causal(S), src_key_padding_mask=_padding("p", S)))


@pytest.mark.parametrize("masks", ["none", "bool-mask", "is-causal", "padding-float"])
def test_encoder_layer_masks(device, masks):
    src = _seq("masks", S, False)
    kwargs = {
        "none": {},
        "bool-mask": dict(src_mask=np.triu(np.ones((S, S), dtype=bool), 1)),
        # PyTorch drops a mask flagged causal for its own: no gradient reaches the mask there
        "is-causal": dict(src_mask=Const(_causal(S)), is_causal=True),
        "padding-float": dict(src_key_padding_mask=Const(
            np.where(_padding("f", S), -np.inf, 0.0).astype(np.float32))),
    }[masks]
    check_sequence_twin(device, _encoder_layer(nn, {}, device), _encoder_layer(torch.nn, {}),
                        [src], kwargs)


def test_encoder_layer_unbatched(device):
    check_sequence_twin(device, _encoder_layer(nn, {}, device), _encoder_layer(torch.nn, {}),
                        [_floats("unbatched", S, D)], dict(src_mask=_causal(S)))


@pytest.mark.parametrize("kind", ["function", "module"])
def test_callable_activation(device, kind):
    ours = F.silu if kind == "function" else nn.GELU(approximate="tanh")
    theirs = torch.nn.functional.silu if kind == "function" else torch.nn.GELU("tanh")
    check_sequence_twin(device, _encoder_layer(nn, dict(activation=ours), device),
                        _encoder_layer(torch.nn, dict(activation=theirs)),
                        [_seq("act", S, False)])


@pytest.mark.parametrize("options", LAYER_OPTIONS, ids=_ids)
def test_decoder_layer(device, options):
    batch_first = options.get("batch_first", False)
    tgt, memory = _seq("tgt", T, batch_first), _seq("memory", S, batch_first)
    masks = dict(tgt_mask=_causal(T), tgt_key_padding_mask=_padding("t", T),
                 memory_key_padding_mask=_padding("m", S))
    check_sequence_twin(device, _decoder_layer(nn, options, device),
                        _decoder_layer(torch.nn, options), [tgt, memory], masks)


def test_decoder_layer_memory_mask_and_causal_flags(device):
    memory_mask = np.random.default_rng(3).random((T, S)) < 0.4
    memory_mask[:, 0] = False
    kwargs = dict(tgt_mask=Const(_causal(T)), tgt_is_causal=True, memory_mask=memory_mask)
    check_sequence_twin(device, _decoder_layer(nn, dict(norm_first=True), device),
                        _decoder_layer(torch.nn, dict(norm_first=True)),
                        [_seq("tgt", T, False), _seq("memory", S, False)], kwargs)


@pytest.mark.parametrize("final_norm", [False, True])
def test_encoder_stack(device, final_norm):
    ours = nn.TransformerEncoder(_encoder_layer(nn, dict(batch_first=True), device), 2,
                                 norm=nn.LayerNorm(D, device=device) if final_norm else None)
    theirs = torch.nn.TransformerEncoder(
        _encoder_layer(torch.nn, dict(batch_first=True)), 2,
        norm=torch.nn.LayerNorm(D) if final_norm else None, enable_nested_tensor=False)
    check_sequence_twin(device, ours, theirs, [_seq("stack", S, True)],
                        dict(mask=Const(_causal(S)), src_key_padding_mask=_padding("s", S)))


@pytest.mark.parametrize("final_norm", [False, True])
def test_decoder_stack(device, final_norm):
    ours = nn.TransformerDecoder(_decoder_layer(nn, {}, device), 2,
                                 norm=nn.LayerNorm(D, device=device) if final_norm else None)
    theirs = torch.nn.TransformerDecoder(_decoder_layer(torch.nn, {}), 2,
                                         norm=torch.nn.LayerNorm(D) if final_norm else None)
    check_sequence_twin(device, ours, theirs, [_seq("tgt", T, False), _seq("mem", S, False)],
                        dict(tgt_mask=Const(_causal(T)),
                             memory_key_padding_mask=_padding("m", S)))


@pytest.mark.parametrize("options", [dict(), dict(batch_first=True, norm_first=True,
                                                  activation="gelu")], ids=_ids)
def test_transformer(device, options):
    kwargs = dict(d_model=D, nhead=HEADS, num_encoder_layers=2, num_decoder_layers=1,
                  dim_feedforward=FF, **options)
    batch_first = options.get("batch_first", False)
    masks = dict(tgt_mask=Const(_causal(T)), src_key_padding_mask=_padding("s", S),
                 tgt_key_padding_mask=_padding("t", T), memory_key_padding_mask=_padding("s", S))
    check_sequence_twin(device, nn.Transformer(**kwargs, device=device),
                        torch.nn.Transformer(**kwargs),
                        [_seq("src", S, batch_first), _seq("tgt", T, batch_first)], masks,
                        grad_tol=PERMISSIVE)


def test_transformer_init_and_mask(device):
    pyburn.manual_seed(0)
    model = nn.Transformer(16, 2, 1, 1, dim_feedforward=32, device=device)
    w = model.encoder.layers[0].linear1.weight.numpy()
    assert np.abs(w).max() <= np.sqrt(6 / (16 + 32))  # Glorot uniform on every matrix
    assert model.encoder.norm is not None and model.decoder.norm is not None
    mask = nn.Transformer.generate_square_subsequent_mask(4, device=device)
    np.testing.assert_array_equal(mask.numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())


def test_stack_layers_are_independent_deep_copies(device):
    layer = _encoder_layer(nn, {}, device)
    encoder = nn.TransformerEncoder(layer, 3)
    weights = [m.linear1.weight for m in encoder.layers]
    assert len({id(w) for w in weights} | {id(layer.linear1.weight)}) == 4
    for w in weights:
        np.testing.assert_array_equal(w.numpy(), layer.linear1.weight.numpy())
    encoder.to(device.autodiff())
    assert all(p.requires_grad for p in encoder.parameters())
    assert encoder.layers[0].activation is F.relu


def test_training_mode_dropout(device):
    """Dropout acts in training (reproducibly under a seed) and not in eval."""
    layer = _encoder_layer(nn, dict(batch_first=True), device)
    x = pyburn.tensor(_seq("train", S, True), device=device)
    runs = []
    for _ in range(2):
        pyburn.manual_seed(8)
        runs.append(layer(x).numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.allclose(runs[0], layer.eval()(x).numpy())


def test_errors(device):
    with pytest.raises(pyburn.ArgumentError, match="activation"):
        nn.TransformerEncoderLayer(D, HEADS, activation="tanh")
    with pytest.raises(pyburn.ArgumentError, match="num_layers"):
        nn.TransformerEncoder(_encoder_layer(nn, {}, device), 0)
    model = nn.Transformer(D, HEADS, 1, 1, dim_feedforward=FF, device=device)
    src = pyburn.ones(S, N, D, device=device)
    with pytest.raises(pyburn.ShapeError, match="batch size"):
        model(src, pyburn.ones(T, N + 1, D, device=device))
    with pytest.raises(pyburn.ShapeError, match="d_model"):
        model(src, pyburn.ones(T, N, D + 2, device=device))
