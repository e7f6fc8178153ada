"""Distance modules against PyTorch."""

from __future__ import annotations

from pyburn import nn

from .twins import check_twin, inputs_for, torch


def test_pairwise_distance(device):
    a, b = inputs_for("pairwise", (3, 4), (3, 4))
    check_twin(device, nn.PairwiseDistance(p=1.5, keepdim=True),
               torch.nn.PairwiseDistance(p=1.5, keepdim=True), [a, b])


def test_cosine_similarity(device):
    a, b = inputs_for("cosine", (2, 3, 4), (2, 3, 4))
    check_twin(device, nn.CosineSimilarity(dim=2), torch.nn.CosineSimilarity(dim=2), [a, b])
