"""Embedding against PyTorch: lookup, padding_idx, max_norm, gradients, from_pretrained."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, np, torch

IDS = np.array([[1, 4, 0], [4, 4, 2]])
CASES = {
    "plain": {},
    "padding": {"padding_idx": 4},
    "negative-padding": {"padding_idx": -1},
    "max-norm": {"max_norm": 1.0, "norm_type": 1.0},
    "scale-grad": {"scale_grad_by_freq": True},
}


@pytest.mark.parametrize("case", CASES)
def test_embedding_matches_pytorch(device, case):
    kwargs = CASES[case]
    check_twin(device, nn.Embedding(5, 3, **kwargs, device=device),
               torch.nn.Embedding(5, 3, **kwargs), [IDS])


def test_padding_row_is_zero_at_init(device):
    layer = nn.Embedding(6, 4, padding_idx=2, device=device)
    assert layer.padding_idx == 2
    assert layer.weight[2].tolist() == [0.0] * 4 and layer.weight.numpy().any()


def test_from_pretrained(device):
    values = pyburn.tensor([[1.0, 2.0], [3.0, 4.0]], device=device.autodiff())
    frozen = nn.Embedding.from_pretrained(values)
    assert not frozen.weight.requires_grad and frozen.weight.device is device.autodiff()
    assert frozen(pyburn.tensor([1], device=device.autodiff())).tolist() == [[3.0, 4.0]]
    trainable = nn.Embedding.from_pretrained(values, freeze=False)
    assert trainable.weight.requires_grad
    with pytest.raises(pyburn.ShapeError, match="2-d"):
        nn.Embedding.from_pretrained(pyburn.ones(3, device=device))


def test_bad_padding_idx():
    with pytest.raises(pyburn.ArgumentError, match="padding_idx 5"):
        nn.Embedding(5, 2, padding_idx=5, device="flex")
