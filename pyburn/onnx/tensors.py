"""ONNX constants (`ir.TensorData`) to pyburn tensors and back, and the weights file of
generated code held the same way (`load_weights`).

ONNX has more element types than pyburn's seven. Each loads as the narrowest pyburn dtype
that holds every value exactly, by the conversions `pyburn.store` uses for safetensors
(`pyburn.store.elements`): int8, int16 and uint16 become int32, uint32 and uint64 int64,
bfloat16 and the 8- and 4-bit floats float32. The 4- and 2-bit integers (packed two or four
to a byte) become uint8 (unsigned) or int32 (signed). Strings and complex numbers have no
pyburn form and are refused with a `pyburn.DTypeError` naming the tensor.

ONNX's index type is int64; a device without int64 (wgpu) gets int32, with values past
int32's range saturated, so that the ``INT64_MAX`` that Slice uses for "to the end" stays
the largest value rather than wrapping to -1.
"""

from __future__ import annotations

from array import array
from typing import Any

from .._tensor import Tensor, wrap
from ..devices import Device
from ..devices import device as as_device
from ..dtypes import DType, float32, int32, int64
from ..errors import DTypeError, FormatError
from ..store.elements import ELEMENTS, Element, float32_map
from ..store.source import Source
from ..store.stores import SafetensorsStore
from .ir import TensorData

#: the safetensors element each ONNX dtype's bytes are, where `pyburn.store` has one
_ELEMENT_OF = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16",
    "int32": "I32", "int64": "I64", "uint32": "U32", "uint64": "U64", "float16": "F16",
    "float32": "F32", "float64": "F64", "bfloat16": "BF16", "float8e4m3fn": "F8_E4M3",
    "float8e4m3fnuz": "F8_E4M3FNUZ", "float8e5m2": "F8_E5M2",
    "float8e5m2fnuz": "F8_E5M2FNUZ", "float8e8m0": "F8_E8M0", "float4e2m1": "F4",
    "complex64": "C64",
}
#: sub-byte integers: (bits, signed); they are unpacked to one byte each, then load as the
#: 8-bit integer of the same signedness
_PACKED_INTS = {"uint4": (4, False), "int4": (4, True), "uint2": (2, False),
                "int2": (2, True)}
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
#: int64 bytes to int32 bytes, keeping the low half of each (for values known to fit)
_INT64_LOW_HALF = Element("I64", 64, int32, ((0, None), (1, None), (2, None), (3, None)))


def to_tensor(td: TensorData, device: Device | str | None = None) -> Tensor:
    """The constant `td` as a pyburn tensor on `device` (default: the default device).

    Raises `pyburn.DTypeError` naming the tensor for element types pyburn cannot hold
    (strings, complex numbers, 4-bit floats) or that the device cannot (float64 on wgpu),
    and `pyburn.FormatError` when its bytes do not fit its shape.
    """
    dev = as_device(device)
    label = f"ONNX tensor {td.name!r}" if td.name else "an ONNX tensor"
    raw = td.data()
    if isinstance(raw, list):
        raise DTypeError(f"{label} holds strings, which pyburn tensors cannot")
    element, raw = _element(td, raw, label)
    own = element.target(label)
    nbytes = element.nbytes(td.numel)
    if nbytes != memoryview(raw).nbytes:
        raise FormatError(f"{label} of shape {list(td.dims)} and type {td.dtype} takes "
                          f"{nbytes} bytes, but holds {memoryview(raw).nbytes}")
    return _held(element.decode(raw, label), own, tuple(td.dims), dev, label)


def load_weights(source: Source, device: Device | str | None = None) -> dict[str, Tensor]:
    """The tensors of a safetensors file (a path, bytes or a binary file) on `device`, held
    as the runner holds ONNX's: int64 as int32 on a device without int64, saturated. How the
    code that ``pyburn onnx convert`` writes loads its weights file on any device."""
    dev = as_device(device)
    return {name: _held(t.element.decode(memoryview(t.read()), t.label), t.dtype, t.shape, dev,
                        t.label) for name, t in SafetensorsStore(source).items()}


def _held(data: Any, dtype: DType, shape: tuple[int, ...], dev: Device, label: str) -> Tensor:
    """Elements decoded as `dtype` as a tensor on `dev`: int64 becomes int32 (saturated) where
    `dev` has no int64; another dtype it lacks is a `pyburn.DTypeError` naming `label`."""
    if dtype is int64 and int64 not in dev.backend.dtypes:
        dtype, data = int32, _int64_to_int32(data, label)
    if dtype not in dev.backend.dtypes:
        raise DTypeError(f"{label} is {dtype.name}, which device {dev.name!r} does not hold")
    return wrap(dev.backend.from_bytes(data, shape, dtype), shape, dtype, dev)


def _element(td: TensorData, raw: Any, label: str) -> tuple[Element, Any]:
    """The safetensors element `td`'s bytes load through, and the bytes (sub-byte integers
    unpacked to one byte each)."""
    if td.dtype in _PACKED_INTS:
        bits, signed = _PACKED_INTS[td.dtype]
        per_byte = 8 // bits
        if memoryview(raw).nbytes != -(-td.numel // per_byte):
            raise FormatError(f"{label} of shape {list(td.dims)} and type {td.dtype} takes "
                              f"{-(-td.numel // per_byte)} bytes, but holds "
                              f"{memoryview(raw).nbytes}")
        return ELEMENTS["I8" if signed else "U8"], _unpack(bytes(raw), bits, signed, td.numel)
    if td.dtype == "float4e2m1":
        if memoryview(raw).nbytes != -(-td.numel // 2):
            raise FormatError(f"{label} of shape {list(td.dims)} and type {td.dtype} takes "
                              f"{-(-td.numel // 2)} bytes, but holds {memoryview(raw).nbytes}")
        return _FLOAT4, _unpack(bytes(raw), 4, False, td.numel)
    name = _ELEMENT_OF.get(td.dtype)
    if name is None:
        raise DTypeError(f"{label} has ONNX type {td.dtype}, which pyburn cannot hold")
    return ELEMENTS[name], raw


def _e2m1(nibble: int) -> float:
    """A 4-bit float (sign, 2 exponent bits, 1 mantissa bit; no inf or NaN):
    ±0, 0.5, 1, 1.5, 2, 3, 4 or 6."""
    exponent, mantissa = (nibble >> 1) & 3, nibble & 1
    value = mantissa / 2 if exponent == 0 else (1 + mantissa / 2) * 2.0 ** (exponent - 1)
    return -value if nibble & 8 else value


#: float4e2m1 once unpacked to one nibble per byte: loads as float32, exactly
_FLOAT4 = Element("F4", 8, float32, float32_map(lambda b: _e2m1(b & 15)))


def _unpack(data: bytes, bits: int, signed: bool, count: int) -> bytearray:
    """Sub-byte integers packed lowest bits first, as one byte each (sign-extended when
    `signed`): one translation table per position in the byte, so it runs at C speed."""
    per_byte, mask = 8 // bits, (1 << bits) - 1
    out = bytearray(len(data) * per_byte)
    for k in range(per_byte):
        values = [(b >> (k * bits)) & mask for b in range(256)]
        if signed:
            values = [v - (mask + 1) if v >> (bits - 1) else v for v in values]
        out[k::per_byte] = data.translate(bytes(v & 0xFF for v in values))
    del out[count:]
    return out


def _int64_to_int32(data: Any, label: str) -> bytes | bytearray | memoryview:
    """int64 elements as int32, saturating at int32's limits."""
    values = array("q")
    values.frombytes(data)
    if not values or _INT32_MIN <= min(values) and max(values) <= _INT32_MAX:
        return _INT64_LOW_HALF.decode(data, label)
    return array("i", [min(max(v, _INT32_MIN), _INT32_MAX) for v in values]).tobytes()


def from_tensor(t: Tensor, name: str = "") -> TensorData:
    """The tensor `t` as an ONNX constant named `name` (its bytes read now)."""
    return TensorData(name, t.dtype.name, tuple(t.shape), t.to_bytes())
