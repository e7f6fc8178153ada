"""Dropout: the masks come from pyburn.rand, so they are checked exactly against a mask drawn
the same way, and statistically; gradients are the mask's scale."""

from __future__ import annotations

import math
import statistics

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import Tol, assert_close, flatten, raises

RTOL = Tol(1e-6, 0.0)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_dropout_uses_the_seeded_mask(device, p):
    x = pyburn.randn(40, 50, device=device)
    pyburn.manual_seed(7)
    keep = flatten((pyburn.rand(40, 50, device=device) >= p).tolist())
    pyburn.manual_seed(7)
    got = flatten(F.dropout(x, p).tolist())
    want = [v / (1 - p) if k else 0.0 for v, k in zip(flatten(x.tolist()), keep)]
    assert_close(got, want, RTOL, "dropout", x.shape)
    assert abs(keep.count(False) / len(keep) - p) < 0.05


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
    want = [1 / 0.75 if v != 0 else 0.0 for v in y.detach().tolist()]
    assert_close(x.grad.tolist(), want, RTOL, "gradient")


@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (4, 6, 5)), (F.dropout1d, (6, 5)),
                                      (F.dropout2d, (4, 6, 3, 2)), (F.dropout2d, (6, 3, 2)),
                                      (F.dropout3d, (2, 6, 2, 2, 2))])
def test_channel_dropout_zeroes_whole_channels(device, fn, shape):
    pyburn.manual_seed(3)  # a seed where some channels are dropped and some kept
    y = fn(pyburn.ones(shape, device=device), 0.5)
    spatial = {F.dropout1d: 1, F.dropout2d: 2, F.dropout3d: 3}[fn]
    channels = y.reshape(-1, math.prod(shape[len(shape) - spatial:])).tolist()
    dropped = [all(v == 0 for v in c) for c in channels]
    kept = [all(v == 2.0 for v in c) for c in channels]
    assert all(d or k for d, k in zip(dropped, kept))
    assert any(dropped) and any(kept)


def test_alpha_dropout_keeps_mean_and_variance(device):
    x = pyburn.randn(20000, device=device)
    assert F.alpha_dropout(x, 0.3) is x  # training=False by default, as in PyTorch
    y = F.alpha_dropout(x, 0.3, training=True).tolist()
    assert abs(statistics.fmean(y)) < 0.05 and abs(statistics.pstdev(y) - 1.0) < 0.05


def test_feature_alpha_dropout_shares_a_draw_per_channel(device):
    y = F.feature_alpha_dropout(pyburn.ones(8, 4, 5, device=device), 0.5, training=True)
    rows = y.reshape(-1, 5).tolist()
    assert all(max(row) == min(row) for row in rows)


@pytest.mark.parametrize("call", [lambda x: F.dropout(x, 1.5), lambda x: F.dropout(x, -0.1),
                                  lambda x: F.dropout2d(x, 2.0),
                                  lambda x: F.alpha_dropout(x, -1.0, training=True)])
def test_bad_p(device, call):
    with raises(pyburn.ArgumentError, "p must be in [0, 1]"):
        call(pyburn.ones(2, 3, 4, device=device))


def test_channel_dropout_rank(device):
    with raises(pyburn.ShapeError, "(5,)"):
        F.dropout2d(pyburn.ones(5, device=device))
