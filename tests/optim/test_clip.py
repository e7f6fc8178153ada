"""Gradient clipping against torch.nn.utils.clip_grad_norm_ / clip_grad_value_."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn.optim import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm

from .helpers import assert_close, gradient_sequence, initial_values, pyburn_params, torch_params

torch = pytest.importorskip("torch")


def _pair(dev, scale: float = 1.0):
    """The same parameters with the same gradients (times `scale`) in both frameworks; the
    last parameter has no gradient."""
    values = initial_values() + [[1.0, 2.0]]
    ours, theirs = pyburn_params(values, dev), torch_params(torch, values)
    for p, q, g in zip(ours, theirs, gradient_sequence(steps=1)[0]):
        p.grad = pyburn.tensor(g, device=dev) * scale
        q.grad = torch.tensor(g) * scale
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.0, 0.5])
@pytest.mark.parametrize("max_norm", [0.1, 1e3])
def test_clip_grad_norm_matches_torch(dev, norm_type, max_norm):
    ours, theirs = _pair(dev)
    total = clip_grad_norm_(ours, max_norm, norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.shape == () and total.device is dev
    assert_close(total, expected, "total norm")
    for p, q in zip(ours, theirs):
        if q.grad is None:
            assert p.grad is None
        else:
            assert_close(p.grad, q.grad, "clipped gradient")


def test_clip_grad_norm_takes_a_tensor_or_a_generator(dev):
    ours, _ = _pair(dev, scale=10.0)
    grad = ours[1].grad
    total = clip_grad_norm_(ours[1], 1.0)
    assert ours[1].grad is grad  # clipped in place
    assert ours[1].grad.norm().item() == pytest.approx(1.0, rel=1e-5)
    assert total.item() > 1.0
    clip_grad_norm_((p for p in ours), 0.5)
    assert get_total_norm([p.grad for p in ours[:2]]).item() == pytest.approx(0.5, rel=1e-5)


def test_clip_grad_norm_without_gradients_is_zero(dev):
    (p,) = pyburn_params([[1.0]], dev)
    assert clip_grad_norm_([p], 1.0).item() == 0.0


def test_error_if_nonfinite(dev):
    ours, _ = _pair(dev)
    ours[0].grad = ours[0].grad * math.inf
    with pytest.raises(pyburn.ArgumentError, match="error_if_nonfinite"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)


def test_norm_then_clip_in_two_steps(dev):
    ours, theirs = _pair(dev)
    grads = [p.grad for p in ours if p.grad is not None]
    total = get_total_norm(grads, 2.0)
    clip_grads_with_norm_(ours, 0.2, total)
    torch.nn.utils.clip_grad_norm_(theirs, 0.2)
    for p, q in zip(ours[:2], theirs[:2]):
        assert_close(p.grad, q.grad, "clipped gradient")


@pytest.mark.parametrize("clip_value", [0.3, 5.0])
def test_clip_grad_value_matches_torch(dev, clip_value):
    ours, theirs = _pair(dev)
    clip_grad_value_(ours, clip_value)
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for p, q in zip(ours[:2], theirs[:2]):
        assert_close(p.grad, q.grad, "clamped gradient", rtol=0, atol=0)
