"""embedding and one_hot against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, assert_close, raises, read_back, torch

TF = torch.nn.functional


@pytest.mark.parametrize("index_shape", [(5,), (2, 3), ()], ids=str)
@pytest.mark.parametrize("options", [dict(), dict(padding_idx=2), dict(padding_idx=-1),
                                     dict(scale_grad_by_freq=True),
                                     dict(padding_idx=0, scale_grad_by_freq=True)], ids=str)
def test_embedding(ref, index_shape, options):
    index = ref.ints(*index_shape, high=6)
    if index.ndim:
        index.reshape(-1)[:3] = [0, 2, 2]  # repeats and the padding row
    ref.check(F.embedding, TF.embedding, index, ref.floats(6, 4), **options)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_weight_in_place(device, norm_type):
    weight = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32) * 2
    index = np.array([[0, 1, 1], [3, 5, 0]], dtype=np.int32)
    p_weight, t_weight = pyburn.tensor(weight, device=device), torch.tensor(weight)
    got = F.embedding(pyburn.tensor(index, device=device), p_weight, max_norm=1.5,
                      norm_type=norm_type)
    want = TF.embedding(torch.tensor(index).long(), t_weight, max_norm=1.5,
                        norm_type=norm_type)
    assert_close(got.numpy(), want.numpy(), PERMISSIVE["float32"], "output")
    assert_close(p_weight.numpy(), t_weight.numpy(), PERMISSIVE["float32"], "weight")


def test_embedding_max_norm_gradient(ref):
    ref.check(F.embedding, TF.embedding, np.array([0, 1, 1, 4]), ref.floats(5, 3, low=-3, high=3),
              max_norm=1.0)


def test_one_hot(ref):
    ref.check(F.one_hot, TF.one_hot, ref.ints(2, 3, high=5), 6)


def _z(device, *shape):
    return pyburn.zeros(shape, device=device)


BAD = [
    ("float indices", pyburn.DTypeError,
     lambda d: F.embedding(_z(d, 3), _z(d, 4, 2)), ("integer",)),
    ("weight rank", pyburn.ShapeError,
     lambda d: F.embedding(pyburn.tensor([0], device=d), _z(d, 4)), ("2-d",)),
    ("index range", pyburn.IndexOutOfRange,
     lambda d: F.embedding(pyburn.tensor([4], device=d), _z(d, 4, 2)), ("4",)),
    ("negative index", pyburn.IndexOutOfRange,
     lambda d: F.embedding(pyburn.tensor([0, -1], device=d), _z(d, 4, 2)), ("-1",)),
    ("padding_idx range", pyburn.ArgumentError,
     lambda d: F.embedding(pyburn.tensor([0], device=d), _z(d, 4, 2), padding_idx=4),
     ("padding_idx",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        read_back(call(device))
