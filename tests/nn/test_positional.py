"""PositionalEncoding and RotaryEmbedding against reference formulas written here in float64:
the sinusoidal table, its use with every layout, dropout; both rotary forms, partial
rotation, offsets, sequence dims, the relative-position property, gradients."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .functional.helpers import BALANCED, Tol, TorchChecker
from .twins import assert_close, np, torch  # skips this module where PyTorch is missing


def sinusoid_table(max_len: int, d_model: int) -> np.ndarray:
    """pe[p, 2i] = sin(p / 10000^(2i / d)), pe[p, 2i + 1] = cos(p / 10000^(2i / d))."""
    pe = np.zeros((max_len, d_model))
    for p in range(max_len):
        for j in range(d_model):
            angle = p / 10000.0 ** ((j - j % 2) / d_model)
            pe[p, j] = np.sin(angle) if j % 2 == 0 else np.cos(angle)
    return pe


@pytest.mark.parametrize("d_model", [6, 7])
def test_table(device, d_model):
    enc = nn.PositionalEncoding(d_model, max_len=50, device=device)
    assert list(enc.state_dict()) == ["pe"] and list(enc.parameters()) == []
    assert enc.pe.shape == (50, 1, d_model)  # the PyTorch tutorial's layout
    assert_close(enc.pe.numpy()[:, 0], sinusoid_table(50, d_model), BALANCED["float32"], "pe")


def test_table_far_positions(device):
    """Positions in the thousands keep float32 accuracy (the table is built in float64 where
    the device has it)."""
    if "float64" not in device.caps:
        pytest.skip("needs float64")
    enc = nn.PositionalEncoding(4, max_len=5000, device=device)
    far = np.arange(4990, 5000)
    want = np.stack([np.sin(far), np.cos(far), np.sin(far / 100.0), np.cos(far / 100.0)], 1)
    assert_close(enc.pe.numpy()[4990:, 0], want, BALANCED["float32"], "pe at 4990..4999")


@pytest.mark.parametrize("layout", ["time-major", "batch-first", "unbatched"])
def test_forward_layouts(device, layout):
    d, length = 6, 5
    enc = nn.PositionalEncoding(d, dropout=0.3, max_len=20, batch_first=layout == "batch-first",
                                device=device).eval()
    shape = {"time-major": (length, 2, d), "batch-first": (2, length, d),
             "unbatched": (length, d)}[layout]
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    table = sinusoid_table(length, d)
    want = x + (table[None] if layout == "batch-first" else
                table[:, None] if layout == "time-major" else table)
    got = enc(pyburn.tensor(x, device=device)).numpy()
    assert_close(got, want, BALANCED["float32"], layout)


def test_dropout_and_gradient(device):
    enc = nn.PositionalEncoding(8, dropout=0.5, max_len=16, device=device)
    pyburn.manual_seed(0)
    out = enc(pyburn.zeros(16, 4, 8, device=device)).numpy()
    expected = 2.0 * sinusoid_table(16, 8)[:, None]  # kept values are scaled by 1 / (1 - p)
    kept = out != 0
    assert 0.35 < kept.mean() < 0.65
    np.testing.assert_allclose(out[kept], np.broadcast_to(expected, out.shape)[kept],
                               rtol=1e-5, atol=1e-6)
    dev = device.autodiff()
    x = pyburn.zeros(3, 1, 8, device=dev, requires_grad=True)
    nn.PositionalEncoding(8, dropout=0.0, max_len=16, device=dev)(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 1, 8)))


def test_positional_errors(device):
    enc = nn.PositionalEncoding(4, max_len=3, device=device)
    with pytest.raises(pyburn.ShapeError, match="max_len"):
        enc(pyburn.zeros(4, 1, 4, device=device))
    with pytest.raises(pyburn.ShapeError, match="x must be"):
        enc(pyburn.zeros(2, 1, 5, device=device))
    with pytest.raises(pyburn.ArgumentError, match="dropout"):
        nn.PositionalEncoding(4, dropout=2.0)


def rope_reference(x, dim: int, base: float, interleaved: bool, offset: int, seq_dim: int):
    """RoPE written pair by pair in PyTorch float64 (so it differentiates too): pair i of
    position p, (a, b) -> (a cos(p t_i) - b sin(p t_i), b cos(p t_i) + a sin(p t_i)) with
    t_i = base^(-2i / dim); pair i is features (2i, 2i + 1) interleaved, (i, i + dim / 2)
    otherwise; features past `dim` unchanged."""
    moved = x.movedim(seq_dim, -2)
    length = moved.shape[-2]
    out = moved.clone()
    for i in range(dim // 2):
        first, second = (2 * i, 2 * i + 1) if interleaved else (i, i + dim // 2)
        angle = torch.arange(offset, offset + length, dtype=torch.float64) * base ** (-2 * i / dim)
        a, b = moved[..., first], moved[..., second]
        out[..., first] = a * angle.cos() - b * angle.sin()
        out[..., second] = b * angle.cos() + a * angle.sin()
    return out.movedim(-2, seq_dim)


ROPE_CASES = [
    # (x shape, dim, base, interleaved, offset, seq_dim)
    ((2, 3, 5, 8), 8, 10000.0, False, 0, -2),
    ((2, 3, 5, 8), 8, 10000.0, True, 0, -2),
    ((2, 3, 5, 8), 4, 10000.0, False, 0, -2),  # partial rotary
    ((2, 3, 5, 8), 6, 500.0, True, 7, -2),
    ((2, 5, 3, 8), 8, 10000.0, False, 0, 1),  # (N, L, heads, head_dim)
    ((5, 8), 8, 10000.0, True, 2, 0),
    ((1, 1, 4, 16), 16, 10000.0, False, 3000, -2),  # far positions
]


@pytest.mark.parametrize("case", ROPE_CASES, ids=lambda c: "-".join(map(str, c[1:])))
def test_rotary(device, case):
    shape, dim, base, interleaved, offset, seq_dim = case
    rope = nn.RotaryEmbedding(dim, base=base, interleaved=interleaved, seq_dim=seq_dim)
    checker = TorchChecker(device, f"rope{case}")
    tolerances = {}
    if offset > 100 and "float64" not in device.caps:
        # angles computed in float32: position * theta is off by up to ~position * 2^-24
        loose = {"float32": Tol(0.0, 4 * (offset + shape[seq_dim]) * 2.0**-24)}
        tolerances = dict(tol=loose, grad_tol=loose)
    checker.check(lambda x: rope(x, offset=offset),
                  lambda x: rope_reference(x, dim, base, interleaved, offset, seq_dim),
                  checker.floats(*shape), **tolerances)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_scores_depend_on_relative_position(device, interleaved):
    """q at position m . k at position n depends only on m - n: shifting both by an offset
    leaves every score unchanged."""
    rope = nn.RotaryEmbedding(8, interleaved=interleaved)
    rng = np.random.default_rng(1)
    q, k = (pyburn.tensor(rng.normal(size=(6, 8)).astype(np.float32), device=device)
            for _ in range(2))
    scores = [(rope(q, offset=s) @ rope(k, offset=s).T).numpy() for s in (0, 11, 250)]
    for other in scores[1:]:
        np.testing.assert_allclose(other, scores[0], rtol=1e-4, atol=1e-4)
    # and position 0 is not rotated at all
    np.testing.assert_array_equal(rope(q)[0].numpy(), q[0].numpy())


def test_rotary_errors(device):
    x = pyburn.ones(2, 4, 8, device=device)
    with pytest.raises(pyburn.ArgumentError, match="even"):
        nn.RotaryEmbedding(5)
    with pytest.raises(pyburn.ShapeError, match="at least dim"):
        nn.RotaryEmbedding(10)(x)
    with pytest.raises(pyburn.ArgumentError, match="seq_dim"):
        nn.RotaryEmbedding(8, seq_dim=-1)(x)
    with pytest.raises(pyburn.ArgumentError, match="offset"):
        nn.RotaryEmbedding(8)(x, offset=-1)
    assert list(nn.RotaryEmbedding(8).state_dict()) == []
