"""The "conv_activation" capability against PyTorch (float64 CPU): a convolution with an
activation written over its output, in each geometry the cpu backend computes apart
(numba's depthwise kernel, the 1x1 product, im2col), numba's loop and numpy's alike, and
the calls it refuses (recorded ones)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyburn
from pyburn.backends.cpu import jit as cpu_jit
from pyburn.ops import capability

from .test_activation import SPECIAL, TORCH

#: (name, the capability's spec, PyTorch's function)
ACTIVATIONS = [("relu", ("clip", 0.0, np.inf), torch.relu),
               ("relu6", ("clip", 0.0, 6.0), lambda y: y.clamp(0.0, 6.0)),
               ("clip crossed", ("clip", 1.0, -1.0), lambda y: y.clamp(1.0, -1.0))] + [
    (name, (name,), fn) for name, fn in TORCH.items()]
#: (x shape, w shape, stride, padding, groups): depthwise, 1x1, im2col with a batch of 2
#: (its product comes back as a transposed view), a grouped 1-d one
GEOMETRIES = [((1, 6, 9, 9), (6, 1, 3, 3), (2, 2), ((1, 1), (1, 1)), 6),
              ((2, 5, 4, 4), (7, 5, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),
              ((2, 4, 6, 5), (6, 4, 3, 2), (1, 2), ((1, 0), (2, 1)), 1),
              ((2, 4, 11), (6, 2, 3), (2,), ((1, 1),), 2)]


@pytest.fixture(params=["jit", "numpy"])
def jit(request, monkeypatch) -> str:
    """numba's loops, then numpy's ($PYBURN_CPU_JIT=0)."""
    monkeypatch.setattr(cpu_jit, "enabled", lambda: request.param == "jit")
    return request.param


def _inputs(geometry, dtype):
    shape, wshape, *_ = geometry
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape) * 3
    x.reshape(-1)[:len(SPECIAL)] = SPECIAL[:x.size]  # inf, NaN, breakpoints, signed zeros
    return x.astype(dtype), (rng.standard_normal(wshape)).astype(dtype), \
        rng.standard_normal(wshape[0]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=["depthwise", "1x1", "im2col", "1-d"])
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_against_float64_torch(jit, activation, geometry, dtype):
    _, spec, fn = activation
    x, w, b = _inputs(geometry, dtype)
    _, _, stride, padding, groups = geometry
    dilation = (1,) * len(stride)
    t = [pyburn.from_numpy(a, device="cpu") for a in (x, w, b)]
    got = capability.conv(t[0], t[1], stride, padding, dilation, groups, t[2], spec).numpy()
    # PyTorch on the same (rounded) inputs, symmetric padding taken apart as pyburn's is
    tx = torch.nn.functional.pad(torch.from_numpy(x.astype(np.float64)),
                                 [p for pair in reversed(padding) for p in pair])
    conv = getattr(torch.nn.functional, f"conv{len(stride)}d")
    y = conv(tx, torch.from_numpy(w.astype(np.float64)), torch.from_numpy(b.astype(np.float64)),
             stride, 0, dilation, groups)
    want = fn(torch.from_numpy(y.numpy().astype(dtype).astype(np.float64))).numpy()
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    info = np.finfo(dtype)
    # the convolution's own rounding (sums of a few dozen products), then the activation's
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=64 * info.eps,
                               atol=64 * info.eps * np.nanmax(np.abs(y.numpy()[np.isfinite(
                                   y.numpy())])))
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=["depthwise", "1x1", "im2col", "1-d"])
def test_the_activation_is_the_separate_ops_one(jit, geometry):
    """Fused or not, the same float32 values, bit for bit (the 1x1 product's bias joins the
    activation's pass)."""
    x, w, b = _inputs(geometry, "float32")
    _, _, stride, padding, groups = geometry
    dilation = (1,) * len(stride)
    t = [pyburn.from_numpy(a, device="cpu") for a in (x, w, b)]
    y = capability.conv(t[0], t[1], stride, padding, dilation, groups, t[2])
    for name, spec, _ in ACTIVATIONS:
        got = capability.conv(t[0], t[1], stride, padding, dilation, groups, t[2], spec)
        want = y.clamp(*spec[1:]) if spec[0] == "clip" else getattr(pyburn.nn.functional,
                                                                    spec[0])(y)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_a_recorded_call_is_refused():
    dev = pyburn.device("cpu").autodiff()
    x = pyburn.randn(1, 2, 4, 4, device=dev, requires_grad=True)
    w = pyburn.randn(3, 2, 1, 1, device=dev)
    with pytest.raises(pyburn.ArgumentError, match="cannot be recorded"):
        capability.conv(x, w, (1, 1), ((0, 0), (0, 0)), (1, 1), 1, None, ("silu",))
    with pyburn.no_grad():  # nothing records: fine
        capability.conv(x, w, (1, 1), ((0, 0), (0, 0)), (1, 1), 1, None, ("silu",))
