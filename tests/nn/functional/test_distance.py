"""pairwise_distance and cosine_similarity against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn.nn.functional as F

from .helpers import torch

TF = torch.nn.functional


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
    small = np.array([[1e-9, 0.0], [0.0, 0.0], [3.0, 4.0]], dtype=np.float32)
    ref.check(F.cosine_similarity, TF.cosine_similarity, small, ref.floats(3, 2), grad=False)
    ref.check(F.cosine_similarity, TF.cosine_similarity, ref.floats(3, 2), ref.floats(3, 2),
              eps=0.5)
