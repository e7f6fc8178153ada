"""pairwise_distance and cosine_similarity against PyTorch."""

from __future__ import annotations

import pytest

import pyburn.nn.functional as F

from .helpers import TF


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((5,), (5,)),
                                    ((2, 3, 5), (3, 5))], ids=str)
def test_pairwise_distance(ref, p, keepdim, shapes):
    ref.check(F.pairwise_distance, TF.pairwise_distance, ref.floats(*shapes[0]),
              ref.floats(*shapes[1]), p=p, keepdim=keepdim)


@pytest.mark.parametrize("dim", [1, 0, -1])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (1, 5)), ((3, 4, 5), (3, 4, 5))],
                         ids=str)
def test_cosine_similarity(ref, dim, shapes):
    ref.check(F.cosine_similarity, TF.cosine_similarity, ref.floats(*shapes[0]),
              ref.floats(*shapes[1]), dim=dim)


def test_cosine_similarity_small_vectors(ref):
    small = ref.tensor([[1e-9, 0.0], [0.0, 0.0], [3.0, 4.0]])
    ref.check(F.cosine_similarity, TF.cosine_similarity, small, ref.floats(3, 2), grad=False)
    # norms below eps: PyTorch clamps them outside autograd, so its gradient there is not
    # that of its forward (pyburn's is): values only
    ref.check(F.cosine_similarity, TF.cosine_similarity, ref.floats(3, 2, low=-0.3, high=0.3),
              ref.floats(3, 2), eps=0.5, grad=False)
    # every norm above eps: values and gradients
    ref.check(F.cosine_similarity, TF.cosine_similarity, ref.floats(3, 2, low=0.4, high=2),
              ref.floats(3, 2, low=-2, high=-0.4), eps=0.5)
