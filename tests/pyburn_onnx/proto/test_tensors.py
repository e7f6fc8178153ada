"""ONNX constants to pyburn tensors (`pyburn.onnx.tensors`): every ONNX element type loads
as the pyburn dtype that holds its values exactly, on every device."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import pyburn
from pyburn.dtypes import as_dtype
from pyburn.onnx import ir, proto
from pyburn.onnx.tensors import from_tensor, to_tensor

#: ONNX type -> the numpy dtype of the pyburn dtype it loads as
LOADS_AS = {
    "FLOAT": "float32", "UINT8": "uint8", "INT8": "int32", "UINT16": "int32", "INT16": "int32",
    "INT32": "int32", "INT64": "int64", "BOOL": "bool", "FLOAT16": "float16",
    "DOUBLE": "float64", "UINT32": "int64", "UINT64": "int64", "BFLOAT16": "float32",
    "FLOAT8E4M3FN": "float32", "FLOAT8E4M3FNUZ": "float32", "FLOAT8E5M2": "float32",
    "FLOAT8E5M2FNUZ": "float32", "FLOAT8E8M0": "float32", "UINT4": "uint8", "INT4": "int32",
    "UINT2": "uint8", "INT2": "int32", "FLOAT4E2M1": "float32",
}
REFUSED = ["STRING", "COMPLEX64", "COMPLEX128"]


def _values(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values of ONNX type `name` that span its range, as the numpy type onnx uses."""
    dtype = helper.tensor_dtype_to_np_dtype(getattr(onnx.TensorProto, name))
    n = int(np.prod(shape))
    if name == "BOOL":
        values = np.arange(n) % 3 == 0
    elif dtype.kind in "iu" or name.endswith(("INT4", "INT2")):
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        low, high = (info.min, info.max) if info else \
            ((-8, 7) if name == "INT4" else (0, 15) if name == "UINT4" else
             (-2, 1) if name == "INT2" else (0, 3))
        high = min(int(high), 2**63 - 1)  # uint64 past int64's range: see the test below
        values = [int(low) + (high - int(low)) * i // max(n - 1, 1) for i in range(n)]
    else:
        values = np.linspace(-3.5, 3.5, n).tolist()
    return np.asarray(values, dtype=dtype).reshape(shape)


def _held(device: pyburn.Device, numpy_dtype: str) -> str:
    """The dtype `device` holds a tensor of `numpy_dtype` in (int64 without int64: int32)."""
    if numpy_dtype == "int64" and pyburn.int64 not in device.backend.dtypes:
        return "int32"
    return numpy_dtype


@pytest.mark.parametrize("name", list(LOADS_AS))
@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3)], ids=str)
def test_every_onnx_type_loads_exactly(device, name, shape):
    values = _values(name, shape)
    td = proto.read_tensor(numpy_helper.from_array(values, "x").SerializeToString())
    want = _held(device, LOADS_AS[name])
    if as_dtype(want) not in device.backend.dtypes:
        with pytest.raises(pyburn.DTypeError, match=f"ONNX tensor 'x' is {want}"):
            to_tensor(td, device)
        return
    t = to_tensor(td, device)
    assert t.shape == shape and t.dtype.name == want
    expected = values.astype(np.float32) if values.dtype.kind == "V" or \
        values.dtype in (ml_dtypes.bfloat16,) else values
    if want != LOADS_AS[name]:  # int64 held as int32 saturates
        expected = np.clip(expected, -(2**31), 2**31 - 1)
    got = t.numpy()
    assert got.shape == shape
    np.testing.assert_array_equal(got.astype(np.float64), np.asarray(expected, np.float64))


@pytest.mark.parametrize("name", REFUSED)
def test_types_pyburn_cannot_hold_are_refused_by_name(name):
    code = getattr(onnx.TensorProto, name)
    if name == "STRING":
        t = helper.make_tensor("words", code, [1], [b"a"])
    else:
        t = helper.make_tensor("words", code, [2], bytes(32 if "128" in name else 16)[
            :{"COMPLEX64": 16, "COMPLEX128": 32}[name]], raw=True)
    with pytest.raises(pyburn.DTypeError, match="ONNX tensor 'words'"):
        to_tensor(proto.read_tensor(t.SerializeToString()), "flex")


def test_uint64_past_int64_is_refused():
    t = numpy_helper.from_array(np.array([1, 2**63], dtype=np.uint64), "big")
    with pytest.raises(pyburn.DTypeError, match="ONNX tensor 'big' is U64 with values of "
                                                "2\\*\\*63 or more"):
        to_tensor(proto.read_tensor(t.SerializeToString()), "flex")


def test_int64_saturates_on_devices_without_it():
    devices = [d for d in pyburn.available_devices() if pyburn.int64 not in d.backend.dtypes]
    if not devices:
        pytest.skip("every device here holds int64")
    big = np.array([2**63 - 1, -(2**63), 2**31, -(2**31) - 1, 7, -7], dtype=np.int64)
    fits = np.array([2**31 - 1, -(2**31), 0, -1], dtype=np.int64)
    for device in devices:
        for values, expected in ((big, [2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 7, -7]),
                                 (fits, fits.tolist())):
            t = to_tensor(ir.TensorData("ends", "int64", values.shape, values.tobytes()),
                          device)
            assert t.dtype is pyburn.int32 and t.tolist() == expected


def test_a_wrong_number_of_bytes_is_a_format_error():
    with pytest.raises(pyburn.FormatError, match="ONNX tensor 'w' of shape \\[3\\] and type "
                                                 "float32 takes 12 bytes, but holds 8"):
        to_tensor(ir.TensorData("w", "float32", (3,), bytes(8)), "flex")


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "uint8", "bool",
                                   "float64"])
def test_from_tensor_round_trips_through_onnx(dtype):
    t = pyburn.tensor([[1, 0, 3], [4, 5, 6]], dtype=dtype, device="flex")
    td = from_tensor(t, "x")
    ref = onnx.TensorProto()
    ref.ParseFromString(proto.write_tensor(td))
    assert ref.name == "x"
    np.testing.assert_array_equal(numpy_helper.to_array(ref), t.numpy())
    assert to_tensor(td, "flex").tolist() == t.tolist()
