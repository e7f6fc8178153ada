"""Dropout: the masks come from pyburn.rand, so they are checked exactly against a mask drawn
the same way, and statistically; gradients are the mask's scale."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import raises


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_dropout_uses_the_seeded_mask(device, p):
    x = pyburn.randn(40, 50, device=device)
    pyburn.manual_seed(7)
    keep = (pyburn.rand(40, 50, device=device) >= p).numpy()
    pyburn.manual_seed(7)
    got = F.dropout(x, p).numpy()
    np.testing.assert_allclose(got, np.where(keep, x.numpy() / (1 - p), 0.0), rtol=1e-6)
    assert abs((~keep).mean() - p) < 0.05


def test_dropout_is_the_same_on_every_device():
    results = []
    for dev in pyburn.available_devices():
        pyburn.manual_seed(11)
        results.append(F.dropout(pyburn.ones(64, device=dev), 0.5).tolist())
    assert all(r == results[0] for r in results)


def test_dropout_off(device):
    x = pyburn.randn(5, device=device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 1.0).tolist() == [0.0] * 5


def test_dropout_gradient(device):
    dev = device.autodiff()
    x = pyburn.randn(30, device=dev, requires_grad=True)
    y = F.dropout(x, 0.25)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)


@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (4, 6, 5)), (F.dropout1d, (6, 5)),
                                      (F.dropout2d, (4, 6, 3, 2)), (F.dropout2d, (6, 3, 2)),
                                      (F.dropout3d, (2, 6, 2, 2, 2))])
def test_channel_dropout_zeroes_whole_channels(device, fn, shape):
    pyburn.manual_seed(3)  # a seed where some channels are dropped and some kept
    y = fn(pyburn.ones(shape, device=device), 0.5).numpy()
    spatial = {F.dropout1d: 1, F.dropout2d: 2, F.dropout3d: 3}[fn]
    channels = y.reshape(y.shape[:y.ndim - spatial] + (-1,))
    assert np.all((channels == 0).all(-1) | (channels == 2.0).all(-1))
    assert (channels == 0).all(-1).any() and (channels == 2.0).all(-1).any()


def test_alpha_dropout_keeps_mean_and_variance(device):
    x = pyburn.randn(20000, device=device)
    assert F.alpha_dropout(x, 0.3) is x  # training=False by default, as in PyTorch
    y = F.alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05


def test_feature_alpha_dropout_shares_a_draw_per_channel(device):
    y = F.feature_alpha_dropout(pyburn.ones(8, 4, 5, device=device), 0.5, training=True)
    values = y.numpy()
    assert np.all(values.max(-1) == values.min(-1))


@pytest.mark.parametrize("call", [lambda x: F.dropout(x, 1.5), lambda x: F.dropout(x, -0.1),
                                  lambda x: F.dropout2d(x, 2.0),
                                  lambda x: F.alpha_dropout(x, -1.0, training=True)])
def test_bad_p(device, call):
    with raises(pyburn.ArgumentError, "p must be in [0, 1]"):
        call(pyburn.ones(2, 3, 4, device=device))


def test_channel_dropout_rank(device):
    with raises(pyburn.ShapeError, "(5,)"):
        F.dropout2d(pyburn.ones(5, device=device))
