"""The ONNX operators that make tensors (pyburn/onnx/ops/creation.py) against onnx's
reference; the random ones, whose reference draws from numpy's generator, against their
distributions and their determinism."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("attrs", [
    {"value": X}, {"value": np.array(7, np.int64)}, {"value": np.zeros((0, 2), np.float32)},
    {"value_float": 2.5}, {"value_floats": [1.0, -2.0]}, {"value_int": 3},
    {"value_ints": [1, 2, 3]}], ids=lambda a: next(iter(a)))
def test_constant(dev, attrs):
    check_node("Constant", [], attrs, opset=13, device=dev)


def test_constant_refuses_strings_and_ambiguity():
    with pytest.raises(pyburn.ArgumentError, match="string"):
        run_pyburn("Constant", [], {"value_string": "a"}, opset=13, device="flex")
    with pytest.raises(pyburn.ArgumentError, match="exactly one"):
        run_pyburn("Constant", [], {"value_int": 1, "value_float": 1.0}, opset=13,
                   device="flex")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(2, 3), (0,), (), (4, 0, 2)], ids=str)
@pytest.mark.parametrize("value", [None, np.array([1.5], np.float32), np.array([7], np.int32),
                                   np.array([3], np.int64), np.array([True])],
                         ids=lambda v: "default" if v is None else v.dtype.name)
def test_constant_of_shape(dev, shape, value):
    attrs = {} if value is None else {"value": value}
    check_node("ConstantOfShape", [np.array(shape, np.int64)], attrs, opset=21, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("start, limit, delta", [
    (np.float32(1), np.float32(5), np.float32(0.5)), (np.int32(10), np.int32(4), np.int32(-3)),
    (np.int64(0), np.int64(5), np.int64(1)), (np.float32(5), np.float32(1), np.float32(1)),
    (np.float16(0), np.float16(3), np.float16(0.25))], ids=str)
def test_range(dev, start, limit, delta):
    check_node("Range", [start, limit, delta], opset=11, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 2)], ids=str)
@pytest.mark.parametrize("k", [0, 1, -2, 7])
@pytest.mark.parametrize("dtype", [None, TensorProto.INT32, TensorProto.DOUBLE,
                                   TensorProto.BOOL])
def test_eye_like(dev, shape, k, dtype):
    attrs = {"k": k} | ({} if dtype is None else {"dtype": dtype})
    check_node("EyeLike", [np.zeros(shape, np.float32)], attrs, opset=22, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("start, end", [(None, None), (1, None), (None, -1), (-2, None),
                                        (1, 2), (2, 1), (-10, 10)], ids=str)
def test_shape(dev, start, end):
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    check_node("Shape", [X], attrs, opset=21, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_size_and_identity(dev):
    check_node("Size", [X], opset=21, device=dev)
    check_node("Size", [np.zeros((3, 0), np.float32)], opset=21, device=dev)
    check_node("Identity", [X], opset=21, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_dropout_in_inference(dev):
    check_node("Dropout", [X], {"ratio": 0.3}, opset=7, device=dev, outputs=2,
               expected=[X, np.ones_like(X)])
    check_node("Dropout", [X], {"ratio": 0.3}, opset=10, device=dev, outputs=2)
    check_node("Dropout", [X, np.float32(0.3)], opset=13, device=dev, outputs=2)
    check_node("Dropout", [X, np.float32(0.3), np.array(False)], opset=22, device=dev,
               outputs=2)
    check_node("Dropout", [X, np.float32(0.0), np.array(True)], opset=22, device=dev,
               outputs=2)


@pytest.mark.parametrize("dev", DEVICES)
def test_dropout_in_training(dev):
    x = np.ones((200, 50), np.float32)
    out, mask = run_pyburn("Dropout", [x, np.float32(0.25), np.array(True)], {"seed": 3},
                           opset=22, device=dev)
    kept = mask.numpy()
    assert mask.dtype is pyburn.bool_ and 0.72 < kept.mean() < 0.78
    np.testing.assert_allclose(out.numpy(), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)
    again, _ = run_pyburn("Dropout", [x, np.float32(0.25), np.array(True)], {"seed": 3},
                          opset=22, device=dev)
    np.testing.assert_array_equal(again.numpy(), out.numpy())


def _draw(dev, op, inputs, attrs):
    (out,) = run_pyburn(op, inputs, attrs, opset=22, device=dev)
    return out


@pytest.mark.parametrize("dev", DEVICES)
def test_random_normal_and_uniform(dev):
    normal = _draw(dev, "RandomNormal", [], {"shape": [100, 100], "mean": 2.0, "scale": 3.0,
                                             "seed": 5.0})
    values = normal.numpy()
    assert normal.dtype is pyburn.float32 and values.shape == (100, 100)
    assert abs(values.mean() - 2.0) < 0.1 and abs(values.std() - 3.0) < 0.1
    uniform = _draw(dev, "RandomUniform", [], {"shape": [100, 100], "low": -1.0, "high": 3.0,
                                               "dtype": TensorProto.DOUBLE, "seed": 5.0})
    values = uniform.numpy()
    assert uniform.dtype is pyburn.float64 and values.min() >= -1.0 and values.max() < 3.0
    assert abs(values.mean() - 1.0) < 0.05
    like = _draw(dev, "RandomNormalLike", [X], {"seed": 5.0})
    assert like.shape == X.shape and like.dtype is pyburn.float32
    like = _draw(dev, "RandomUniformLike", [X], {"dtype": TensorProto.DOUBLE})
    assert like.shape == X.shape and like.dtype is pyburn.float64


@pytest.mark.parametrize("op, inputs, attrs", [
    ("RandomNormal", [], {"shape": [4, 5]}), ("RandomUniform", [], {"shape": [4, 5]}),
    ("RandomNormalLike", [X], {}), ("RandomUniformLike", [X], {}),
    ("Bernoulli", [np.full((4, 5), 0.5, np.float32)], {}),
    ("Multinomial", [np.zeros((2, 6), np.float32)], {"sample_size": 5})])
def test_a_seed_gives_the_same_numbers_on_every_device(op, inputs, attrs):
    draws = [_draw(d, op, inputs, attrs | {"seed": 11.0}).numpy() for d in DEVICES]
    # normal draws may differ in the last bit of log and cos between devices
    np.testing.assert_allclose(draws[0], draws[1], rtol=3e-7, atol=1e-7)
    np.testing.assert_array_equal(draws[0], _draw(DEVICES[0], op, inputs,
                                                  attrs | {"seed": 11.0}).numpy())


@pytest.mark.parametrize("dev", DEVICES)
def test_bernoulli(dev):
    p = np.tile(np.array([0.0, 0.3, 1.0], np.float32), (3000, 1))
    out = _draw(dev, "Bernoulli", [p], {"seed": 1.0})
    values = out.numpy()
    assert out.dtype is pyburn.float32
    np.testing.assert_array_equal(values[:, [0, 2]], p[:, [0, 2]])
    assert abs(values[:, 1].mean() - 0.3) < 0.03
    assert _draw(dev, "Bernoulli", [p], {"dtype": TensorProto.INT32}).dtype is pyburn.int32


@pytest.mark.parametrize("dev", DEVICES)
def test_multinomial(dev):
    probabilities = np.array([[0.1, 0.6, 0.3], [1.0, 0.0, 0.0]], np.float32)
    with np.errstate(divide="ignore"):  # log(0) = -inf is the point: probability 0
        logits = np.log(probabilities)
    out = _draw(dev, "Multinomial", [logits], {"sample_size": 4000, "seed": 2.0})
    values = out.numpy()
    assert out.dtype is pyburn.int32 and values.shape == (2, 4000)
    np.testing.assert_allclose(np.bincount(values[0], minlength=3) / 4000, probabilities[0],
                               atol=0.03)
    assert (values[1] == 0).all()


def test_wgpu_subset():
    dev = wgpu_device()
    check_node("ConstantOfShape", [np.array([2, 3], np.int64)],
               {"value": np.array([4], np.int64)}, opset=21, device=dev)
    check_node("EyeLike", [np.zeros((3, 4), np.float32)], {"k": 1}, opset=22, device=dev)
    check_node("Shape", [X], {"start": 1}, opset=21, device=dev)
    check_node("Range", [np.int32(10), np.int32(4), np.int32(-3)], opset=11, device=dev)
    draws = _draw(dev, "RandomUniform", [], {"shape": [4, 5], "seed": 11.0}).numpy()
    np.testing.assert_array_equal(draws, _draw("cpu", "RandomUniform", [],
                                               {"shape": [4, 5], "seed": 11.0}).numpy())
