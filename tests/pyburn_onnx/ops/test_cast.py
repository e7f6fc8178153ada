"""Cast and CastLike (pyburn/onnx/ops/cast.py) against onnx's reference.

Narrow ONNX types are held in wider pyburn dtypes by value, so a cast to float8 is compared
with the reference's float8 result converted to float32, a cast to int8 with its int8 result
as int32, and so on.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

import pyburn
from pyburn.onnx.ops.cast import cast_to

from .helpers import DEVICES, assert_matches, check_node, reference, run_pyburn, wgpu_device

RNG = np.random.default_rng(0)
SPECIAL = [0.0, -0.0, 0.5, -1.5, 2.5, 3.75, 1e6, -1e6, 1e-7, -1e-7, 1e-30, np.inf, -np.inf,
           np.nan, 448.0, 464.0, 470.0, 240.0, 57344.0, 61440.0, 65504.0, 6.0, 5.5, 0.24,
           0.25, 0.26, 1.0 - 2**-24, 1.0 + 2**-23, 3.3895314e38, 2**-130, 2**-127, 2**-126]
FLOATS = np.concatenate([np.array(SPECIAL, np.float32),
                         RNG.standard_normal(64).astype(np.float32) * 10,
                         RNG.standard_normal(64).astype(np.float32) * 1e-3])
INTS = np.array([-300, -129, -128, -9, -8, -1, 0, 1, 7, 8, 127, 128, 255, 256, 70000],
                np.int32)

T = TensorProto
SIMPLE_TARGETS = [T.FLOAT, T.DOUBLE, T.FLOAT16, T.INT32, T.INT64, T.UINT8, T.INT8, T.INT16,
                  T.UINT16, T.UINT32, T.BOOL]
FLOAT_FORMATS = [T.BFLOAT16, T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ,
                 T.FLOAT4E2M1]


def _ids(v):
    return T.DataType.Name(v) if isinstance(v, int) else None


# casts of out-of-range values overflow on purpose (to inf, or wrapping)
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("to", SIMPLE_TARGETS, ids=_ids)
@pytest.mark.parametrize("source", ["float", "int", "bool"])
def test_cast_to_held_types(dev, to, source):
    if source == "float":
        # float to int is undefined out of range and at NaN: keep to values every type holds
        x = np.array([0.0, 1.5, -2.7, 100.9, 3.0, 0.2], np.float32)
        if to in (T.UINT8, T.UINT16, T.UINT32):
            x = np.abs(x)
    else:
        x = INTS if source == "int" else INTS > 0
    check_node("Cast", [x], {"to": to}, opset=19, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("to", [T.INT4, T.UINT4, T.INT8, T.UINT16])
def test_cast_wraps_ints_into_narrow_types(dev, to):
    check_node("Cast", [INTS], {"to": to}, opset=21, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("to", FLOAT_FORMATS, ids=_ids)
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_rounds_to_float_formats(dev, to, saturate):
    check_node("Cast", [FLOATS], {"to": to, "saturate": saturate}, opset=23, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("to", [T.FLOAT8E4M3FN, T.FLOAT8E5M2])
def test_cast_from_float16_and_float64(dev, to):
    check_node("Cast", [FLOATS.astype(np.float16)], {"to": to}, opset=23, device=dev)
    check_node("Cast", [FLOATS.astype(np.float64)], {"to": to}, opset=23, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_cast_to_float8e8m0(dev, round_mode, saturate):
    x = np.abs(FLOATS)
    # NaN and inf make the reference's float8e8m0 conversion warn; pyburn gives NaN for both
    x = x[np.isfinite(x)]
    want = reference("Cast", [x], {"to": 24, "saturate": saturate, "round_mode": round_mode},
                     opset=25)[0].astype(np.float32)
    got = cast_to(pyburn.from_numpy(x, device=dev), "float8e8m0", saturate=bool(saturate),
                  round_mode=round_mode)
    assert_matches(got, want, pyburn.device(dev), rtol=0, atol=0)


@pytest.mark.parametrize("dev", DEVICES)
def test_cast_like(dev):
    check_node("CastLike", [FLOATS[:20], np.zeros(1, np.float64)], opset=21, device=dev)
    check_node("CastLike", [INTS, np.zeros(1, np.float16)], opset=21, device=dev)


def test_cast_refuses_strings_and_unknown_codes():
    with pytest.raises(pyburn.ArgumentError, match="string"):
        run_pyburn("Cast", [FLOATS], {"to": T.STRING}, opset=13, device="flex")
    with pytest.raises(pyburn.ArgumentError, match="99"):
        run_pyburn("Cast", [FLOATS], {"to": 99}, opset=13, device="flex")


def test_wgpu_subset():
    dev = wgpu_device()
    check_node("Cast", [FLOATS], {"to": T.FLOAT8E4M3FN}, opset=23, device=dev)
    check_node("Cast", [FLOATS], {"to": T.BFLOAT16}, opset=23, device=dev)
    check_node("Cast", [INTS], {"to": T.INT8}, opset=21, device=dev)
    check_node("Cast", [INTS], {"to": T.INT64}, opset=21, device=dev)
