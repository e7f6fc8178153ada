"""The example kernels (pyburn/kernel/examples.py) on every device, against PyTorch and
numpy: the same kernel runs on the interpreter (flex), the numpy executor (cpu) and WGSL
(wgpu)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyburn
from pyburn.kernel import examples, gradcheck

RNG = np.random.default_rng(0)


def _on(device: pyburn.Device, array: np.ndarray) -> pyburn.Tensor:
    return pyburn.from_numpy(array, device=device)


def test_gelu_matches_torch(device):
    x = RNG.standard_normal((3, 70)).astype(np.float32) * 3
    want = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(examples.gelu(_on(device, x)).numpy(), want, atol=2e-6)


@pytest.mark.parametrize("width", [1, 63, 200])
def test_softmax_matches_torch(device, width):
    x = RNG.standard_normal((5, width)).astype(np.float32) * 4
    want = torch.softmax(torch.from_numpy(x), 1).numpy()
    np.testing.assert_allclose(examples.softmax(_on(device, x)).numpy(), want, atol=2e-7,
                               rtol=1e-5)


@pytest.mark.parametrize("width", [5, 300])
def test_rms_norm_matches_torch(device, width):
    """On the adapter's subgroups and on emulated ones alike (tests/kernel/test_subgroups)."""
    x = RNG.standard_normal((4, width)).astype(np.float32) * 3
    w = RNG.standard_normal(width).astype(np.float32)
    want = torch.nn.functional.rms_norm(torch.from_numpy(x), (width,), torch.from_numpy(w),
                                        1e-5).numpy()
    got = examples.rms_norm(_on(device, x), _on(device, w), 1e-5).numpy()
    np.testing.assert_allclose(got, want, atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (9, 17, 5), (16, 8, 24)])
def test_tiled_matmul_matches_numpy(device, m, k, n):
    """Both kernels autotune picks from: staged through shared memory, and not."""
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
    for staged in (True, False):
        got = examples.matmul.fn(_on(device, a), _on(device, b), staged, 32, 4, 8).numpy()
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, atol=1e-5, rtol=1e-5)


def test_the_autotuned_matmul_matches_numpy(device):
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 2), (2, 4)))
    got = examples.matmul(_on(device, a), _on(device, b)).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, atol=1e-5, rtol=1e-5)


def test_histogram_counts_like_numpy(device):
    values = RNG.integers(-3, 20, 500).astype(np.int32)
    kept = values[(values >= 0) & (values < 16)]
    got = examples.histogram(_on(device, values), 16).numpy()
    np.testing.assert_array_equal(got, np.bincount(kept, minlength=16))


def test_a_custom_op_trains_with_its_own_backward(device):
    """smooth_abs's forward and backward are kernels: its gradient matches PyTorch's of the
    same formula, passes gradcheck, and a few steps of gradient descent drive |w| down."""
    dev = device.autodiff()
    x = RNG.standard_normal(6).astype(np.float32)
    w = _on(dev, x).requires_grad_()
    examples.smooth_abs(w).sum().backward()
    t = torch.from_numpy(x).requires_grad_()
    torch.sqrt(t * t + examples.EPS).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), atol=1e-6)
    assert gradcheck(examples.smooth_abs, _on(dev, x[:3]).requires_grad_())
    weights = _on(dev, x).requires_grad_()
    optimizer = pyburn.optim.SGD([weights], lr=0.1)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = examples.smooth_abs(weights).sum()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0] - 0.5
