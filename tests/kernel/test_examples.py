"""The example kernels (pyburn/kernel/examples.py) on every device, against PyTorch and
numpy, on inputs and shapes that hypothesis draws: the same kernel runs on the interpreter
(flex), the numpy executor (cpu) and WGSL (wgpu)."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import pyburn
from pyburn.kernel import examples, gradcheck

RNG = np.random.default_rng(0)


def _on(device: pyburn.Device, array: np.ndarray) -> pyburn.Tensor:
    return pyburn.from_numpy(array, device=device)


def _floats(shape: st.SearchStrategy, bound: float = 10.0) -> st.SearchStrategy:
    """float32 arrays of `shape`, values in [-bound, bound] (zeros and subnormals too)."""
    return shape.flatmap(lambda s: arrays(np.float32, s, elements=st.floats(
        -bound, bound, width=32)))


def _sizes(most: int) -> st.SearchStrategy[int]:
    return st.integers(1, most)


#: few examples each: flex runs every invocation in Python
EXAMPLES = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@EXAMPLES
@given(x=_floats(st.tuples(_sizes(3), _sizes(70))))
def test_gelu_matches_torch(device, x):
    want = torch.nn.functional.gelu(torch.from_numpy(x), approximate="tanh").numpy()
    np.testing.assert_allclose(examples.gelu(_on(device, x)).numpy(), want, atol=2e-6,
                               rtol=1e-5)


@EXAMPLES
@given(x=_floats(st.tuples(_sizes(4), _sizes(150)), 20.0))
def test_softmax_matches_torch(device, x):
    want = torch.softmax(torch.from_numpy(x), 1).numpy()
    np.testing.assert_allclose(examples.softmax(_on(device, x)).numpy(), want, atol=2e-7,
                               rtol=1e-5)


@EXAMPLES
@given(data=st.data())
def test_rms_norm_matches_torch(device, data):
    """On the adapter's subgroups and on emulated ones alike (tests/kernel/test_subgroups)."""
    x = data.draw(_floats(st.tuples(_sizes(4), _sizes(150))))
    w = data.draw(_floats(st.just((x.shape[1],)), 3.0))
    want = torch.nn.functional.rms_norm(torch.from_numpy(x), (x.shape[1],),
                                        torch.from_numpy(w), 1e-5).numpy()
    got = examples.rms_norm(_on(device, x), _on(device, w), 1e-5).numpy()
    np.testing.assert_allclose(got, want, atol=2e-6, rtol=1e-5)


@EXAMPLES
@given(data=st.data(), staged=st.booleans())
def test_tiled_matmul_matches_numpy(device, data, staged):
    """Both kernels autotune picks from: staged through shared memory, and not."""
    m, k, n = (data.draw(_sizes(40)) for _ in range(3))
    a, b = data.draw(_floats(st.just((m, k)))), data.draw(_floats(st.just((k, n))))
    got = examples.matmul.fn(_on(device, a), _on(device, b), staged, 32, 4, 8).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, atol=1e-4, rtol=1e-5)


def test_the_autotuned_matmul_matches_numpy(device):
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in ((3, 2), (2, 4)))
    got = examples.matmul(_on(device, a), _on(device, b)).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, atol=1e-5, rtol=1e-5)


@EXAMPLES
@given(values=st.lists(st.integers(-5, 40), min_size=1, max_size=300), bins=_sizes(32))
def test_histogram_counts_like_numpy(device, values, bins):
    x = np.array(values, np.int32)
    kept = x[(x >= 0) & (x < bins)]
    got = examples.histogram(_on(device, x), bins).numpy()
    np.testing.assert_array_equal(got, np.bincount(kept, minlength=bins))


@EXAMPLES
@given(x=_floats(st.tuples(_sizes(90))))
def test_smooth_abs_and_its_gradient_match_torch(device, x):
    w = _on(device.autodiff(), x).requires_grad_()
    y = examples.smooth_abs(w)
    y.sum().backward()
    t = torch.from_numpy(x).requires_grad_()
    want = torch.sqrt(t * t + examples.EPS)
    want.sum().backward()
    np.testing.assert_allclose(y.numpy(), want.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), atol=1e-6)


def test_a_custom_op_trains_with_its_own_backward(device):
    """smooth_abs's forward and backward are kernels: it passes gradcheck, and a few steps
    of gradient descent drive |w| down."""
    dev = device.autodiff()
    x = RNG.standard_normal(6).astype(np.float32)
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
