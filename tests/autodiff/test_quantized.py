"""The backward rule of the "quant_matmul" capability's recorded op (quant_linear, in
pyburn/ops/capability/quantized.py): the gradients of a weight-only quantized linear map in
its input and bias against float64 numpy, on every device (the kernel where the device
offers it, the composite's own rules elsewhere). Here, in the autodiff suite, so that the
guard of tests/table_coverage.py sees the op run on every device that offers it."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.quant import kernels as qk

np = pytest.importorskip("numpy")


def test_gradients_in_the_input_and_the_bias(dev):
    from quant.test_kernels import pack

    rng = np.random.default_rng(2)
    n, k = 5, 11
    q = rng.integers(-8, 8, (n, k))
    scale = rng.uniform(0.05, 0.1, n).astype(np.float32)
    x = rng.standard_normal((2, 3, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal((2, 3, n)).astype(np.float32)
    tx = pyburn.from_numpy(x, dev).requires_grad_()
    tb = pyburn.from_numpy(bias, dev).requires_grad_()
    y = qk.linear_weight_only(tx, pyburn.from_numpy(pack(q, 4), dev),
                              pyburn.from_numpy(scale, dev), None, bits=4, signed=True,
                              block=0, k=k, bias=tb)
    (y * pyburn.from_numpy(g, dev)).sum().backward()
    dense = q * scale.astype(np.float64).reshape(-1, 1)
    np.testing.assert_allclose(tx.grad.numpy(), g @ dense, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tb.grad.numpy(), g.sum((0, 1)), rtol=1e-5, atol=1e-5)
