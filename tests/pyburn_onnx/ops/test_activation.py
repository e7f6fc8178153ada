"""The ONNX activation and softmax operators (pyburn/onnx/ops/activation.py) against onnx's
reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node, wgpu_device

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((2, 3, 4)) * 3).astype(np.float32)
X[0, 0, :3] = [0.0, -3.0, 3.0]  # the kinks of the hard* functions
INTS = RNG.integers(-5, 6, (3, 4)).astype(np.int32)

CASES = [
    ("Relu", {}, 14), ("LeakyRelu", {}, 16), ("LeakyRelu", {"alpha": 0.3}, 16),
    ("Elu", {}, 22), ("Elu", {"alpha": 0.5}, 6), ("Selu", {}, 22),
    ("Selu", {"alpha": 2.0, "gamma": 3.0}, 6), ("Celu", {}, 12), ("Celu", {"alpha": 2.0}, 12),
    ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20), ("HardSigmoid", {}, 22),
    ("HardSigmoid", {"alpha": 0.5, "beta": 0.6}, 6), ("HardSwish", {}, 22), ("Mish", {}, 22),
    ("Sigmoid", {}, 13), ("Tanh", {}, 13), ("Softplus", {}, 22), ("Softsign", {}, 22),
    ("Swish", {}, 24), ("Swish", {"alpha": 0.5}, 24), ("ThresholdedRelu", {}, 22),
    ("ThresholdedRelu", {"alpha": 2.0}, 10), ("Shrink", {}, 9),
    ("Shrink", {"bias": 1.5, "lambd": 1.0}, 9),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op, attrs, opset", CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_activation(dev, op, attrs, opset):
    check_node(op, [X], attrs, opset=opset, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op, attrs", [("Relu", {}), ("LeakyRelu", {"alpha": 2.0}),
                                       ("Shrink", {"bias": 1.0, "lambd": 2.0})])
def test_activation_of_ints(dev, op, attrs):
    x = INTS if op != "LeakyRelu" else INTS.astype(np.float32)
    check_node(op, [x], attrs, opset=16, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("slope", [np.float32([0.25]), RNG.standard_normal(4).astype(np.float32),
                                   RNG.standard_normal((3, 1)).astype(np.float32)])
def test_prelu(dev, slope):
    check_node("PRelu", [X, slope], opset=16, device=dev)


def _flattened(op: str, x: np.ndarray, axis: int) -> np.ndarray:
    """The pre-13 meaning (onnx's reference implements only the 13+ one): x flattened to
    2-d at `axis`, each row normalised, in float64."""
    rows = x.reshape(int(np.prod(x.shape[:axis % x.ndim])), -1).astype(np.float64)
    if op == "Hardmax":
        out = np.zeros_like(rows)
        out[np.arange(len(rows)), rows.argmax(1)] = 1
    else:
        shifted = rows - rows.max(1, keepdims=True)
        log = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        out = log if op == "LogSoftmax" else np.exp(log)
    return out.reshape(x.shape).astype(x.dtype)


AXES = [None, 0, 1, 2, -1, -2]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", AXES)
def test_softmax_family(dev, op, axis):
    attrs = {} if axis is None else {"axis": axis}
    check_node(op, [X], attrs, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", AXES)
def test_softmax_family_before_13_flattens(dev, op, axis):
    attrs = {} if axis is None else {"axis": axis}
    want = _flattened(op, X, 1 if axis is None else axis)
    check_node(op, [X], attrs, opset=11, device=dev, expected=[want])


@pytest.mark.parametrize("dev", DEVICES)
def test_hardmax_takes_the_first_of_ties(dev):
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2]], np.float32)
    check_node("Hardmax", [x], {"axis": 1}, opset=13, device=dev)


def test_wgpu_subset():
    dev = wgpu_device()
    for op, attrs, opset in CASES[::4]:
        check_node(op, [X], attrs, opset=opset, device=dev)
    check_node("Softmax", [X], {"axis": 1}, opset=11, device=dev,
               expected=[_flattened("Softmax", X, 1)])
    check_node("LogSoftmax", [X], {"axis": 1}, opset=13, device=dev)
