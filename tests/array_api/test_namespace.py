"""pyburn.array_api's own surface on every device: the entry points on Tensor, the inspection
object, dtypes per device and the errors for what a device cannot do."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import array_api as xp


def test_a_tensor_gives_the_namespace_and_moves(device):
    t = pyburn.tensor([1.0, 2.0], device=device)
    assert t.__array_namespace__() is xp
    assert t.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(pyburn.ArgumentError, match="2024.12"):
        t.__array_namespace__(api_version="2099.01")
    assert t.to_device("flex").device == pyburn.device("flex")
    assert xp.__array_api_version__ == "2024.12"


def test_the_inspection_object_describes_each_device(device):
    info = xp.__array_namespace_info__()
    assert device in info.devices() and info.default_device() == pyburn.default_device()
    assert info.capabilities()["boolean indexing"]
    assert info.default_dtypes(device=device) == {
        "real floating": xp.float32, "complex floating": None, "integral": xp.int32,
        "indexing": xp.int32}
    stored = info.dtypes(device=device)
    assert {"bool", "uint8", "int32", "float32"} <= stored.keys()
    assert ("float64" in stored) == ("float64" in device.caps)
    assert set(info.dtypes(device=device, kind="integral").values()) <= {
        xp.uint8, xp.int32, xp.int64}


def test_what_a_device_lacks_raises_a_type_error(device):
    if "float64" in device.caps:
        assert xp.asarray([1.0], dtype=xp.float64, device=device).dtype is xp.float64
        return
    with pytest.raises(TypeError, match="float64"):
        xp.asarray([1.0], dtype=xp.float64, device=device)


def test_arguments_outside_the_standard_raise_value_errors(device):
    x = xp.reshape(xp.arange(6, device=device), (2, 3))
    with pytest.raises(ValueError, match="not of size 1"):
        xp.squeeze(x, axis=0)
    with pytest.raises(ValueError, match="one size along axis"):
        xp.vecdot(x, x[:, :2])
    with pytest.raises(ValueError, match="kinds are"):
        xp.isdtype(xp.int32, "integer")
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, dtype=xp.float32, copy=False)


def test_functions_take_a_python_scalar_for_one_operand(device):
    x = xp.asarray([-3.0, 4.0], device=device)
    assert xp.hypot(x, 4.0).tolist() == [5.0, xp.hypot(4.0, x).tolist()[1]]
    assert xp.copysign(2.0, x).tolist() == [-2.0, 2.0]
    assert xp.add(x, 1).tolist() == [-2.0, 5.0]


def test_decompositions_run_on_the_device(device):
    a = xp.asarray([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]], device=device)
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    w, v = xp.linalg.eigh(a)
    for t in (u, s, vh, w, v, xp.linalg.inv(a), xp.linalg.cholesky(a)):
        assert t.device == device
    assert abs(xp.linalg.det(a).item() - xp.prod(w).item()) < 1e-3
    assert xp.max(xp.abs(u @ (s[:, None] * vh) - a)).item() < 1e-5
