"""scaled_dot_product_attention against PyTorch."""

from __future__ import annotations

import math

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, Const, raises

SDPA = F.scaled_dot_product_attention


@pytest.mark.parametrize("lead", [(), (3,), (2, 3)], ids=str)
@pytest.mark.parametrize("lengths", [(4, 4), (3, 5)], ids=str)
@pytest.mark.parametrize("options", [dict(), dict(scale=0.3), dict(is_causal=True)], ids=str)
def test_attention(ref, lead, lengths, options):
    length, source = lengths
    ref.check(SDPA, TF.scaled_dot_product_attention, ref.floats(*lead, length, 6),
              ref.floats(*lead, source, 6), ref.floats(*lead, source, 5), tol=PERMISSIVE,
              **options)


@pytest.mark.parametrize("mask_shape", [(4, 5), (2, 1, 4, 5), (1, 5)], ids=str)
def test_attention_bool_mask(ref, mask_shape):
    mask = ref.bools(*mask_shape, p=0.7)
    mask[..., 0] = True  # every query may attend somewhere
    ref.check(SDPA, TF.scaled_dot_product_attention, ref.floats(2, 3, 4, 6),
              ref.floats(2, 3, 5, 6), ref.floats(2, 3, 5, 6), attn_mask=mask, tol=PERMISSIVE)


def test_attention_float_mask(ref):
    ref.check(SDPA, TF.scaled_dot_product_attention, ref.floats(2, 4, 6), ref.floats(2, 5, 6),
              ref.floats(2, 5, 3), attn_mask=ref.floats(4, 5), tol=PERMISSIVE)


def test_attention_fully_masked_rows_give_zeros(ref):
    mask = ref.tensor([[True] * 5] * 4)
    mask[1] = False
    ref.check(SDPA, TF.scaled_dot_product_attention, ref.floats(2, 4, 6), ref.floats(2, 5, 6),
              ref.floats(2, 5, 3), attn_mask=mask, tol=PERMISSIVE)
    minus_inf = mask.map(lambda keep: 0.0 if keep else -math.inf, "float")
    ref.check(SDPA, TF.scaled_dot_product_attention, ref.floats(2, 4, 6), ref.floats(2, 5, 6),
              ref.floats(2, 5, 3), attn_mask=Const(minus_inf), tol=PERMISSIVE)


def test_attention_grouped_query_heads(ref):
    ref.check(SDPA, TF.scaled_dot_product_attention, ref.floats(2, 6, 4, 8),
              ref.floats(2, 2, 5, 8), ref.floats(2, 2, 5, 8), enable_gqa=True, tol=PERMISSIVE)


def test_attention_dropout(device):
    pyburn.manual_seed(3)
    q = pyburn.ones(1, 8, 4, device=device)
    v = pyburn.randn(1, 8, 4, device=device)
    dropped = SDPA(q, q, v, dropout_p=0.5)
    full = SDPA(q, q, v)
    assert dropped.shape == full.shape and not pyburn.allclose(dropped, full)


def _z(device, *shape):
    return pyburn.zeros(shape, device=device)


BAD = [
    ("key size", pyburn.ShapeError,
     lambda d: SDPA(_z(d, 2, 4, 6), _z(d, 2, 5, 5), _z(d, 2, 5, 3)), ("(2, 4, 6)", "(2, 5, 5)")),
    ("value length", pyburn.ShapeError,
     lambda d: SDPA(_z(d, 4, 6), _z(d, 5, 6), _z(d, 4, 3)), ("(4, 3)",)),
    ("mask and causal", pyburn.ArgumentError,
     lambda d: SDPA(_z(d, 4, 6), _z(d, 4, 6), _z(d, 4, 6), _z(d, 4, 4), is_causal=True),
     ("is_causal",)),
    ("rank", pyburn.ShapeError, lambda d: SDPA(_z(d, 6), _z(d, 6), _z(d, 6)), ("2 dims",)),
    ("heads", pyburn.ShapeError,
     lambda d: SDPA(_z(d, 3, 4, 6), _z(d, 2, 4, 6), _z(d, 2, 4, 6), enable_gqa=True),
     ("3 query heads",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(device)
