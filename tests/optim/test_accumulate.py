"""Gradient accumulation: N micro-batches then one update on their mean gradient, as PyTorch
users write it by hand with ``(loss / N).backward()``."""

from __future__ import annotations

import pytest

import pyburn
import pyburn.optim as optim

from .helpers import assert_close, pyburn_params, torch_params

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

MICRO = 4
X = [[0.1 * (i % 5) - 0.2, 0.05 * i, (-1.0) ** i * 0.3] for i in range(24)]
Y = [[0.5 * (i % 3) - 0.4] for i in range(24)]
W0 = [[[0.1], [-0.2], [0.3]], [0.05]]


def _loss(params, x, y):
    return ((x @ params[0] + params[1] - y) ** 2).mean()


def _micro_batches(make):
    """Micro-batches of 2 samples each, through `make` (pyburn.tensor or torch.tensor)."""
    return [(make(X[i:i + 2]), make(Y[i:i + 2])) for i in range(0, len(X), 2)]


@pytest.mark.parametrize("average", [True, False])
def test_matches_manual_accumulation_in_torch(dev, average):
    ours, theirs = pyburn_params(W0, dev), torch_params(torch, W0)
    acc = optim.GradientAccumulator(optim.SGD(ours, lr=0.1, momentum=0.9), steps=MICRO,
                                    average=average)
    for x, y in _micro_batches(lambda v: pyburn.tensor(v, device=dev)):
        _loss(ours, x, y).backward()
        acc.step()
        acc.zero_grad()
    theirs_opt = torch.optim.SGD(theirs, lr=0.1, momentum=0.9)
    divisor = MICRO if average else 1
    for i, (x, y) in enumerate(_micro_batches(torch.tensor)):
        (_loss(theirs, x, y) / divisor).backward()
        if (i + 1) % MICRO == 0:
            theirs_opt.step()
            theirs_opt.zero_grad()
    for p, q in zip(ours, theirs):
        assert_close(p, q, "parameters after accumulated updates")


def test_mean_equals_one_step_on_the_whole_batch(dev):
    accumulated, whole = pyburn_params(W0, dev), pyburn_params(W0, dev)
    acc = optim.GradientAccumulator(optim.Adam(accumulated, lr=0.1), steps=MICRO)
    for x, y in _micro_batches(lambda v: pyburn.tensor(v, device=dev)):
        _loss(accumulated, x, y).backward()
        acc.step()
        acc.zero_grad()
    opt = optim.Adam(whole, lr=0.1)
    for start in range(0, len(X), 2 * MICRO):
        x = pyburn.tensor(X[start:start + 2 * MICRO], device=dev)
        y = pyburn.tensor(Y[start:start + 2 * MICRO], device=dev)
        opt.zero_grad()
        _loss(whole, x, y).backward()
        opt.step()
    for p, q in zip(accumulated, whole):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-6)


def test_updates_only_every_n_calls_and_keeps_gradients_between(dev):
    (p,) = pyburn_params([[1.0]], dev)
    acc = optim.GradientAccumulator(optim.SGD([p], lr=1.0), steps=3)
    seen = []
    for i in range(1, 7):
        (p * float(i)).sum().backward()
        acc.step()
        seen.append((acc.updated, acc.accumulated))
        acc.zero_grad()
        if not acc.updated:
            assert p.grad is not None
    assert seen == [(False, 1), (False, 2), (True, 0)] * 2
    assert p.tolist() == [1.0 - 2.0 - 5.0]  # mean gradients (1+2+3)/3 and (4+5+6)/3


def test_flush_applies_a_partial_window(dev):
    (p,) = pyburn_params([[0.0]], dev)
    acc = optim.GradientAccumulator(optim.SGD([p], lr=1.0), steps=4)
    assert not acc.flush()
    for g in (1.0, 3.0):
        (p * g).sum().backward()
        acc.step()
    assert acc.flush() and acc.updated and acc.accumulated == 0
    assert p.tolist() == [-2.0]


def test_state_dict_round_trip(dev):
    (p,) = pyburn_params([[0.0]], dev)
    acc = optim.GradientAccumulator(optim.Adam([p]), steps=2)
    p.grad = pyburn.tensor([1.0], device=dev)
    acc.step()
    acc.step()
    saved = acc.state_dict()
    (q,) = pyburn_params([p.tolist()], dev)
    other = optim.GradientAccumulator(optim.Adam([q]), steps=2)
    other.load_state_dict(saved)
    assert other.accumulated == 0 and other.optimizer.state[q]["step"] == 1


def test_bad_arguments(dev):
    (p,) = pyburn_params([[0.0]], dev)
    with pytest.raises(pyburn.ArgumentError, match="positive integer"):
        optim.GradientAccumulator(optim.SGD([p]), steps=0)
    with pytest.raises(pyburn.ArgumentError, match="wraps an Optimizer"):
        optim.GradientAccumulator(object(), steps=2)
