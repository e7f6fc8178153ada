"""Dropout layers: the identity in evaluation mode (against PyTorch), the right statistics in
training mode, reproducible masks."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, np, torch

NAMES = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
         "FeatureAlphaDropout"]
SHAPES = {"Dropout1d": (2, 3, 4), "Dropout3d": (2, 3, 2, 2, 2)}


@pytest.mark.parametrize("name", NAMES)
def test_eval_mode_is_identity_like_pytorch(device, name):
    x, = inputs_for(name, SHAPES.get(name, (2, 3, 4, 4)))
    check_twin(device, getattr(nn, name)(0.3), getattr(torch.nn, name)(0.3), [x])


def test_training_statistics(device):
    pyburn.manual_seed(0)
    out = nn.Dropout(0.25)(pyburn.ones(20000, device=device)).numpy()
    assert set(np.unique(out).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert abs((out == 0).mean() - 0.25) < 0.015  # 20,000 draws: 4.4 standard deviations


def test_channel_dropout_zeroes_whole_channels(device):
    pyburn.manual_seed(1)
    out = nn.Dropout2d(0.5)(pyburn.ones(8, 16, 3, 3, device=device)).numpy()
    per_channel = out.reshape(8, 16, 9)
    assert (per_channel.min(-1) == per_channel.max(-1)).all()
    assert 0 < (per_channel[..., 0] == 0).sum() < 8 * 16


def test_masks_are_reproducible(device):
    layer = nn.Dropout(0.5)
    x = pyburn.ones(50, device=device)
    pyburn.manual_seed(5)
    first = layer(x).tolist()
    pyburn.manual_seed(5)
    assert layer(x).tolist() == first


def test_probability_is_checked():
    with pytest.raises(pyburn.ArgumentError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)
