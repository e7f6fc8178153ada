"""The ONNX operator tests' one helper: one node through onnx's reference and through pyburn.

``check_node("Gemm", [a, b, c], {"transA": 1}, opset=13, device=dev)`` builds a one-node
model with `onnx.helper`, runs it with `onnx.reference.ReferenceEvaluator`, calls the
function that `pyburn.onnx.registry` registers for that op type and opset with the same
inputs (numpy arrays become pyburn tensors on `device`, in the dtype pyburn holds the ONNX
type in) and attributes, and compares every output: shape, dtype (the held one) and values
(NaN where NaN, floats within `rtol`/`atol`, everything else exactly).

Inputs are numpy arrays, or None for an omitted optional input. Attribute values are what
`onnx.helper.make_node` takes; a numpy array is a TENSOR attribute (a pyburn tensor for the
function). `expected=` replaces the reference's outputs where it has no implementation (or
a wrong one), for instance for random ops.

The tests run on `DEVICES` (cpu and flex); `wgpu_device()` gives the wgpu device for the
small GPU subset, or skips where it is unavailable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import pyburn
from pyburn.onnx import ops, registry

#: the devices every operator test runs on
DEVICES = ("cpu", "flex")

# numpy dtypes that pyburn holds as a wider one (the ONNX loader converts them the same way)
_HELD = {"int8": "int32", "int16": "int32", "uint16": "int32", "uint32": "int64",
         "uint64": "int64", "int4": "int32", "uint4": "int32", "int2": "int32",
         "uint2": "int32", "bfloat16": "float32", "float8_e4m3fn": "float32",
         "float8_e4m3fnuz": "float32", "float8_e5m2": "float32", "float8_e5m2fnuz": "float32",
         "float4_e2m1fn": "float32", "float8_e8m0fnu": "float32"}


def wgpu_device() -> pyburn.Device:
    """The wgpu device, or a skip where it is unavailable."""
    from pyburn.backends import wgpu

    reason = wgpu.unavailable_reason()
    if reason is not None:
        pytest.skip(f"wgpu: {reason}")
    return pyburn.device("wgpu")


def held_dtype(array: np.ndarray, device: pyburn.Device) -> pyburn.DType:
    """The pyburn dtype that holds `array`'s numpy dtype on `device`."""
    name = _HELD.get(array.dtype.name, array.dtype.name)
    if name == "int64":
        return registry.index_dtype(device)
    return pyburn.dtypes.as_dtype(name)


def to_pyburn(array: np.ndarray | None, device: pyburn.Device) -> pyburn.Tensor | None:
    """`array` as a tensor on `device` in the dtype pyburn holds it in."""
    if array is None:
        return None
    array = np.asarray(array)
    dtype = held_dtype(array, device)
    return pyburn.from_numpy(array.astype(dtype.name), device=device)


def reference(op_type: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any],
              *, opset: int, outputs: int = 1, domain: str = "") -> list[np.ndarray]:
    """The outputs of `onnx.reference` for one node of `op_type`."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op_type, names, out_names, domain=domain or None,
                            **{k: _onnx_attr(v) for k, v in attrs.items()})
    graph = helper.make_graph(
        [node], "one_node",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in zip(names, inputs) if a is not None],
        [helper.make_empty_tensor_value_info(n) for n in out_names])
    opsets = [helper.make_opsetid(domain, opset)]
    if domain:
        opsets.append(helper.make_opsetid("", 21))
    model = helper.make_model(graph, opset_imports=opsets)
    feeds = {n: a for n, a in zip(names, inputs) if a is not None}
    return list(ReferenceEvaluator(model).run(None, feeds))


def _onnx_attr(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    return value


def run_pyburn(op_type: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any], *,
               opset: int, device: Any, domain: str = "") -> list[pyburn.Tensor | None]:
    """The outputs of pyburn's registered function for `op_type` at `opset`, as a list (a
    tuple result is one output per entry, anything else one output)."""
    device = pyburn.device(device)
    spec = ops.lookup(op_type, opset, domain)
    assert spec is not None, f"pyburn registers no {op_type} for opset {opset}"
    kwargs = {k: to_pyburn(v, device) if isinstance(v, np.ndarray) else _decoded(v)
              for k, v in attrs.items()}
    if "device" in spec.given:
        kwargs["device"] = device
    out = spec.fn(*[to_pyburn(a, device) for a in inputs], **kwargs)
    return list(out) if isinstance(out, tuple) else [out]


def _decoded(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def check_node(op_type: str, inputs: Sequence[np.ndarray | None],
               attrs: dict[str, Any] | None = None, *, opset: int, device: Any,
               outputs: int = 1, rtol: float = 1e-5, atol: float = 1e-6, domain: str = "",
               expected: Sequence[np.ndarray] | None = None) -> list[pyburn.Tensor | None]:
    """Check pyburn's `op_type` against the reference on one node; returns pyburn's
    outputs."""
    attrs = attrs or {}
    inputs = [None if a is None else np.asarray(a) for a in inputs]
    if expected is None:
        expected = reference(op_type, inputs, attrs, opset=opset, outputs=outputs, domain=domain)
    got = run_pyburn(op_type, inputs, attrs, opset=opset, device=device, domain=domain)
    device = pyburn.device(device)
    for i, want in enumerate(expected):
        assert i < len(got) and got[i] is not None, f"{op_type}: output {i} missing"
        assert_matches(got[i], np.asarray(want), device, rtol=rtol, atol=atol,
                       what=f"{op_type} output {i}")
    return got


def assert_matches(got: pyburn.Tensor, want: np.ndarray, device: pyburn.Device, *,
                   rtol: float = 1e-5, atol: float = 1e-6, what: str = "result") -> None:
    """`got` has `want`'s shape, the dtype pyburn holds `want`'s dtype in, and its values."""
    assert isinstance(got, pyburn.Tensor), f"{what}: expected a tensor, got {type(got)}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype is held_dtype(want, device), (
        f"{what}: dtype {got.dtype.name}, expected {held_dtype(want, device).name} "
        f"(for {want.dtype.name})")
    values = got.numpy()
    if got.dtype.is_floating_point:
        np.testing.assert_allclose(values.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(values, want.astype(values.dtype), err_msg=what)
