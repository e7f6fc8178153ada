"""embedding and one_hot against PyTorch."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import PERMISSIVE, TF, raises, read_back


@pytest.mark.parametrize("index_shape", [(5,), (2, 3), ()], ids=str)
@pytest.mark.parametrize("options", [dict(), dict(padding_idx=2), dict(padding_idx=-1),
                                     dict(scale_grad_by_freq=True),
                                     dict(padding_idx=0, scale_grad_by_freq=True)], ids=str)
def test_embedding(ref, index_shape, options):
    index = ref.ints(*index_shape, high=6)
    if index.ndim:
        index.values[:3] = [0, 2, 2]  # repeats and the padding row
    ref.check(F.embedding, TF.embedding, index, ref.floats(6, 4), **options)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_weight_in_place(ref, norm_type):
    def renormalising(embedding):
        def call(index, weight):  # the output, then the weight it renormalised
            return embedding(index, weight, max_norm=1.5, norm_type=norm_type), weight

        return call

    ref.check(renormalising(F.embedding), renormalising(TF.embedding),
              ref.tensor([[0, 1, 1], [3, 5, 0]]), ref.floats(6, 4, low=-4, high=4),
              tol=PERMISSIVE, grad=False)


def test_embedding_max_norm_gradient(ref):
    ref.check(F.embedding, TF.embedding, ref.tensor([0, 1, 1, 4]),
              ref.floats(5, 3, low=-3, high=3), max_norm=1.0)


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
