"""The elementwise ONNX operators (pyburn/onnx/ops/elementwise.py) against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((3, 4)).astype(np.float32)
ROW = RNG.standard_normal((4,)).astype(np.float32)
UNIT = RNG.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
POSITIVE = RNG.uniform(0.1, 3.0, (3, 4)).astype(np.float32)
ABOVE_ONE = RNG.uniform(1.1, 3.0, (3, 4)).astype(np.float32)
INTS = RNG.integers(-9, 10, (3, 4)).astype(np.int32)
NONZERO = np.where(INTS == 0, 3, INTS).astype(np.int32)
SPECIAL = np.array([0.5, -1.5, 2.5, np.inf, -np.inf, np.nan, 0.0, -2.5], np.float32)

UNARY = [("Abs", X, 13), ("Neg", X, 13), ("Sign", SPECIAL, 13), ("Floor", X, 13),
         ("Ceil", X, 13), ("Round", SPECIAL, 22), ("Exp", X, 13), ("Log", POSITIVE, 13),
         ("Sqrt", POSITIVE, 13), ("Reciprocal", POSITIVE, 13), ("Erf", X, 13),
         ("Sin", X, 7), ("Cos", X, 7), ("Tan", UNIT, 22), ("Asin", UNIT, 22),
         ("Acos", UNIT, 7), ("Atan", X, 7), ("Sinh", X, 9), ("Cosh", X, 22),
         ("Asinh", X, 9), ("Acosh", ABOVE_ONE, 9), ("Atanh", UNIT, 22), ("IsNaN", SPECIAL, 20),
         ("Abs", INTS, 13), ("Neg", INTS, 13), ("Sign", INTS, 13),
         ("Not", X > 0, 1), ("BitwiseNot", INTS, 18)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op, x, opset", UNARY, ids=lambda v: v if isinstance(v, str) else "")
def test_unary(dev, op, x, opset):
    check_node(op, [x], opset=opset, device=dev)


BINARY = [("Add", X, ROW, 14), ("Sub", X, Y, 7), ("Mul", X, ROW, 13), ("Div", X, POSITIVE, 14),
          ("Add", INTS, NONZERO, 14), ("Mul", INTS.astype(np.int8), NONZERO.astype(np.int8), 14),
          ("Div", INTS, NONZERO, 14), ("Div", INTS.astype(np.int64), np.int64(-4), 14),
          ("Equal", INTS, NONZERO, 19), ("Equal", X, X, 13), ("Greater", X, Y, 13),
          ("Less", X, ROW, 13), ("GreaterOrEqual", INTS, NONZERO, 16),
          ("LessOrEqual", X, Y, 16), ("And", X > 0, Y > 0, 7), ("Or", X > 0, ROW > 0, 7),
          ("Xor", X > 0, Y > 0, 7), ("BitwiseAnd", INTS, NONZERO, 18),
          ("BitwiseOr", INTS.astype(np.uint8), NONZERO.astype(np.uint8), 18),
          ("BitwiseXor", INTS, NONZERO, 18), ("Pow", POSITIVE, Y, 15),
          ("Pow", INTS, np.int32(2), 15), ("Pow", POSITIVE, np.int64(3), 15),
          ("Pow", INTS.astype(np.int64), np.float32(2.0), 15)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op, a, b, opset", BINARY,
                         ids=lambda v: v if isinstance(v, str) else "")
def test_binary(dev, op, a, b, opset):
    check_node(op, [a, b], opset=opset, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("a, b, fmod", [
    (INTS, NONZERO, 0), (INTS, NONZERO, 1), (X * 5, Y, 1),
    (INTS.astype(np.int64), np.int64(-4), 0), (INTS.astype(np.uint8), np.uint8(5), 0)])
def test_mod(dev, a, b, fmod):
    check_node("Mod", [a, b], {"fmod": fmod}, opset=13, device=dev)


def test_mod_of_floats_needs_fmod():
    with pytest.raises(pyburn.ArgumentError, match="fmod=1"):
        run_pyburn("Mod", [X, Y], {}, opset=13, device="flex")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(dev, direction):
    x = np.array([16, 4, 1, 200], np.uint8)
    y = np.array([1, 2, 3, 1], np.uint8)
    check_node("BitShift", [x, y], {"direction": direction}, opset=11, device=dev)
    check_node("BitShift", [x.astype(np.uint32), y.astype(np.uint32)],
               {"direction": direction}, opset=11, device=dev)


def test_bit_shift_direction_is_checked():
    with pytest.raises(pyburn.ArgumentError, match="LEFT or RIGHT"):
        run_pyburn("BitShift", [np.uint8([1]), np.uint8([1])], {"direction": "UP"}, opset=11,
                   device="flex")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("negative, positive", [(1, 1), (0, 1), (1, 0), (0, 0)])
def test_is_inf(dev, negative, positive):
    check_node("IsInf", [SPECIAL], {"detect_negative": negative, "detect_positive": positive},
               opset=20, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_where(dev):
    check_node("Where", [X > 0, X, ROW], opset=16, device=dev)
    check_node("Where", [INTS > 0, INTS, np.int32(-1)], opset=16, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_variadic(dev, op, count):
    inputs = [X, ROW, Y][:count]
    check_node(op, inputs, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_max_min_propagate_nan_and_take_ints(dev):
    check_node("Max", [SPECIAL, SPECIAL[::-1].copy()], opset=13, device=dev)
    check_node("Min", [INTS, NONZERO, np.int32(0)], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("low, high", [(-0.5, 0.5), (None, 0.2), (-0.2, None), (None, None),
                                       (1.0, -1.0)])
def test_clip(dev, low, high):
    bounds = [None if v is None else np.float32(v) for v in (low, high)]
    while bounds and bounds[-1] is None:
        bounds.pop()
    check_node("Clip", [SPECIAL, *bounds], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_clip_ints_and_0d(dev):
    check_node("Clip", [INTS.astype(np.int8), np.int8(-3), np.int8(4)], opset=13, device=dev)
    check_node("Clip", [np.float32(3.0), np.float32(-1), np.float32(1)], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("attrs", [{}, {"min": -0.5}, {"max": 0.3}, {"min": -0.1, "max": 0.1}])
def test_clip_6_attributes(dev, attrs):
    check_node("Clip", [X], attrs, opset=6, device=dev)


def test_wgpu_subset():
    dev = wgpu_device()
    check_node("Add", [X, ROW], opset=14, device=dev)
    check_node("Div", [INTS, NONZERO], opset=14, device=dev)
    check_node("Less", [X, Y], opset=13, device=dev)
    check_node("Mod", [INTS, NONZERO], opset=13, device=dev)
    check_node("Clip", [X, np.float32(-0.5), np.float32(0.5)], opset=13, device=dev)
    check_node("Max", [X, ROW, Y], opset=13, device=dev)
    check_node("Erf", [X], opset=13, device=dev)
