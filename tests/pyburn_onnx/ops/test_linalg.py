"""The ONNX linear algebra operators (pyburn/onnx/ops/linalg.py) against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(0)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("a, b", [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
                                  ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                  ((4,), (4,))], ids=str)
def test_matmul(dev, a, b):
    check_node("MatMul", [floats(*a), floats(*b)], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_matmul_of_ints(dev):
    a = RNG.integers(-5, 5, (3, 4)).astype(np.int32)
    b = RNG.integers(-5, 5, (4, 2)).astype(np.int64)
    check_node("MatMul", [a, a.T.copy()], opset=13, device=dev)
    check_node("MatMul", [a.astype(np.int64), b], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (5,), (3, 1), (3, 5)], ids=str)
@pytest.mark.parametrize("alpha, beta", [(1.0, 1.0), (0.5, 2.0), (1.0, 0.0)])
def test_gemm(dev, trans_a, trans_b, c_shape, alpha, beta):
    a = floats(4, 3) if trans_a else floats(3, 4)
    b = floats(5, 4) if trans_b else floats(4, 5)
    inputs = [a, b] + ([] if c_shape is None else [floats(*c_shape)])
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta}
    check_node("Gemm", inputs, attrs, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("i,i", [(5,), (5,)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]), ("i, j -> ij", [(3,), (4,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ijk->", [(2, 3, 4)]), ("->", [()]),
    (",ij->ij", [(), (2, 3)]), (",->", [(), ()])])
def test_einsum(dev, equation, shapes):
    check_node("Einsum", [floats(*s) for s in shapes], {"equation": equation}, opset=12,
               device=dev, rtol=1e-4)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (5, 5), (2, 4, 4), (2, 3, 3, 3)],
                         ids=str)
def test_det(dev, shape):
    check_node("Det", [floats(*shape)], opset=22, device=dev, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dev", DEVICES)
def test_det_of_singular_and_permuted_matrices(dev):
    singular = np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], np.float32)
    zero_column = np.array([[0, 2, 3], [0, 4, 5], [0, 1, 1]], np.float32)
    permutation = np.eye(4, dtype=np.float32)[[2, 0, 3, 1]]
    check_node("Det", [np.stack([singular, zero_column, np.eye(3, dtype=np.float32)])],
               opset=22, device=dev, atol=1e-5)
    check_node("Det", [permutation], opset=22, device=dev)


def test_det_needs_square_matrices():
    with pytest.raises(pyburn.ShapeError, match="square"):
        run_pyburn("Det", [floats(2, 3)], {}, opset=22, device="flex")


def test_wgpu_subset():
    dev = wgpu_device()
    check_node("MatMul", [floats(2, 3, 4), floats(4, 5)], opset=13, device=dev)
    check_node("Gemm", [floats(4, 3), floats(4, 5), floats(5)], {"transA": 1, "alpha": 0.5},
               opset=13, device=dev)
    check_node("Einsum", [floats(2, 3, 4), floats(2, 4, 5)], {"equation": "bij,bjk->bik"},
               opset=12, device=dev, rtol=1e-4)
    check_node("Det", [floats(2, 3, 3)], opset=22, device=dev, rtol=1e-4, atol=1e-5)
