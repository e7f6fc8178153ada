"""The exporter against the op tables (pyburn/onnx/exporter/primitives.py): the tables' ONNX
columns say which recorded ops have an emitter, and every elementwise form gives
onnxruntime's numbers."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn
from pyburn import nn
from pyburn.onnx.exporter.primitives import EMITTERS
from pyburn.ops import math_ops
from pyburn.ops.capability import CAPABILITIES
from pyburn.ops.elementwise import BINARY, UNARY, ElementwiseOp
from pyburn.ops.reducers import REDUCTIONS

from .test_export import check, ops


def test_every_elementwise_op_with_an_onnx_form_and_every_reduction_has_an_emitter():
    elementwise = [*UNARY.values(), *BINARY.values()]
    assert {op.rule for op in elementwise if op.onnx} | {r.rule for r in REDUCTIONS.values()} \
        <= set(EMITTERS)
    # the ops ONNX has no exact form of (shifts: BitShift is for unsigned types only, and
    # shifting past the width is undefined there)
    assert sorted(op.name for op in elementwise if not op.onnx) == ["left_shift", "right_shift"]


def test_a_scan_is_exported_exactly_where_its_record_names_an_operator():
    exported = {r.scan_rule for r in REDUCTIONS.values() if r.scan_onnx}
    scans = {r.scan_rule for r in REDUCTIONS.values() if r.scans}
    assert exported <= scans
    assert {rule for rule in scans if rule in EMITTERS} == exported


def test_a_capability_op_is_exported_exactly_where_its_record_names_operators():
    for capability in CAPABILITIES.values():
        assert set(capability.onnx) <= set(capability.rules), capability.name
        for op in capability.rules:
            assert (op in EMITTERS) == (op in capability.onnx), (capability.name, op)


def _signed(rng: np.random.Generator, low: float, high: float) -> np.ndarray:
    """(3, 4) float32 values of magnitude in [low, high), either sign."""
    sign = rng.choice([-1.0, 1.0], (3, 4))
    return (sign * rng.uniform(low, high, (3, 4))).astype(np.float32)


def _cases() -> list[tuple[ElementwiseOp, str]]:
    """Every op with an ONNX form, on float inputs and, where it takes them, on int32."""
    cases = []
    for op in (*UNARY.values(), *BINARY.values()):
        if op.onnx is None:
            continue
        if op.domain != "bitwise":
            cases.append((op, "float32"))
        if op.domain in ("numeric", "bitwise") and op.name not in ("div", "pow"):
            cases.append((op, "int32"))
    return cases


class _Apply(nn.Module):
    def __init__(self, op: ElementwiseOp):
        super().__init__()
        self.op = op

    def forward(self, *operands):
        apply = math_ops.unary if self.op.arity == 1 else math_ops.binary
        return apply(self.op.name, *operands)


@pytest.mark.parametrize(("op", "dtype"), _cases(), ids=lambda v: getattr(v, "name", v))
def test_each_elementwise_form_matches_onnxruntime(tmp_path, op, dtype):
    rng = np.random.default_rng(sum(map(ord, op.name)))
    if dtype == "float32":  # the divisor of a binary op kept away from 0
        values = [_signed(rng, 0.0, 2.0), _signed(rng, 0.5, 2.0)][:op.arity]
    else:
        values = [rng.integers(-20, 21, (3, 4)), rng.integers(1, 6, (3, 4))][:op.arity]
    inputs = tuple(pyburn.from_numpy(np.asarray(v, dtype=dtype), device="cpu") for v in values)
    check(_Apply(op), inputs, tmp_path, opset=18)  # the bitwise operators came in 18


class _Activations(nn.Module):
    """The activations called as functions (no module exporter sees them): on cpu each is
    the "activation" capability's one recorded op."""

    def forward(self, x):
        F = nn.functional
        return x.sigmoid() + F.silu(x) + F.hardsigmoid(x) * F.hardswish(x)


@pytest.mark.parametrize(("opset", "written"), [
    (13, {"Sigmoid", "HardSigmoid", "Mul"}), (18, {"Sigmoid", "HardSigmoid", "HardSwish"})])
def test_the_capability_activations_match_onnxruntime(tmp_path, opset, written):
    rng = np.random.default_rng(2)
    x = pyburn.from_numpy(_signed(rng, 0.0, 5.0), device="cpu")
    proto = check(_Activations(), (x,), tmp_path, opset=opset)
    assert written <= ops(proto) and not {"Exp", "Where"} & ops(proto)
