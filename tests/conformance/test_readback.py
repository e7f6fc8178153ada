"""Reading values back (tolist, item, to_bytes, numpy, and their _async twins), tensor
attributes, repr, and copies across devices."""

from __future__ import annotations

import math
import struct

import pytest

import pyburn
from pyburn.runtime import run_sync

from .helpers import flatten, needs_numpy, np

# (dtype, values, struct format): values that each dtype holds exactly, edges included
EXACT = [
    ("float32", [1.5, -0.0, 3.4028234663852886e38, 1.401298464324817e-45, math.inf, -math.inf],
     "f"),
    ("float64", [0.1, -2.5, 1.7976931348623157e308, 5e-324, math.inf, 1e-300], "d"),
    ("float16", [0.5, -65504.0, 6.103515625e-05, 5.960464477539063e-08, math.inf, 1.0], "e"),
    ("int32", [0, -1, 2**31 - 1, -(2**31), 123456789, 7], "i"),
    ("int64", [2**40 + 1, -(2**63), 2**63 - 1, 0, -5, 9], "q"),
    ("uint8", [0, 255, 128, 1, 7, 200], "B"),
    ("bool", [True, False, True, True, False, False], "?"),
]


@pytest.mark.parametrize("dtype,values,fmt", EXACT, ids=[e[0] for e in EXACT])
def test_values_round_trip_exactly(check, dtype, values, fmt):
    check.require(dtype)
    t = pyburn.tensor([values[:3], values[3:]], dtype=getattr(pyburn, dtype), device=check.device)
    assert t.tolist() == [values[:3], values[3:]]
    assert [type(v) for v in flatten(t.tolist())] == [type(v) for v in values]
    assert t.to_bytes() == struct.pack("<" + fmt * len(values), *values)
    assert run_sync(t.to_bytes_async()) == t.to_bytes()
    assert run_sync(t.tolist_async()) == t.tolist()
    assert t[1, 2].item() == values[5] and type(t[1, 2].item()) is type(values[5])
    assert run_sync(t[0, 0].item_async()) == values[0]


def test_nan_reads_back(check):
    t = pyburn.tensor([math.nan, 1.0], device=check.device)
    assert math.isnan(t.tolist()[0]) and math.isnan(t[0].item())
    assert t.to_bytes()[:4] in (struct.pack("<f", math.nan), struct.pack("<f", -math.nan))


@pytest.mark.parametrize("shape,expected", [((0,), []), ((2, 0), [[], []]), ((0, 3), []),
                                            ((1, 1, 0), [[[]]])], ids=str)
def test_tolist_of_empty(check, shape, expected):
    t = pyburn.zeros(shape, device=check.device)
    assert t.tolist() == expected
    assert t.to_bytes() == b""


def test_item_of_0d_and_one_element(check):
    assert pyburn.tensor(2.5, device=check.device).item() == 2.5
    assert pyburn.tensor([[7]], device=check.device).item() == 7
    t = pyburn.tensor([True], device=check.device)
    assert t.item() is True and bool(t) is True
    assert int(pyburn.tensor([3.9], device=check.device)) == 3
    assert float(pyburn.tensor(4, device=check.device)) == 4.0


def test_tolist_of_0d_is_a_scalar(check):
    assert pyburn.tensor(5, device=check.device).tolist() == 5
    assert pyburn.zeros((2, 3), device=check.device).sum().tolist() == 0.0


@needs_numpy
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                   "bool"])
def test_numpy(check, dtype):
    check.require(dtype)
    t = pyburn.arange(6, device=check.device).reshape(2, 3).to(getattr(pyburn, dtype))
    expected = np.arange(6).reshape(2, 3).astype(dtype)
    for a in (t.numpy(), np.asarray(t), run_sync(t.numpy_async())):
        assert a.dtype == expected.dtype and a.shape == (2, 3)
        assert (a == expected).all()
    a = t.numpy()
    a[0, 0] = 1
    assert t.tolist()[0][0] == expected[0, 0]  # a copy: writing it leaves the tensor alone
    assert np.asarray(t, dtype=np.float64).dtype == np.float64


@needs_numpy
def test_numpy_of_views(check):
    t = pyburn.arange(24, device=check.device).reshape(2, 3, 4)
    view = t.permute(2, 0, 1)[::2]
    expected = np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1)[::2]
    assert (view.numpy() == expected).all() and view.to_bytes() == expected.astype("<i4").tobytes()


def test_attributes(check):
    t = pyburn.zeros((2, 3, 4), dtype=pyburn.int32, device=check.device)
    assert t.shape == (2, 3, 4) and type(t.shape) is tuple
    assert (t.ndim, t.numel(), len(t)) == (3, 24, 2)
    assert (t.size(), t.size(1), t.size(-1)) == ((2, 3, 4), 3, 4)
    assert (t.dtype, t.device) == (pyburn.int32, check.device)
    s = pyburn.tensor(1.0, device=check.device)
    assert (s.shape, s.ndim, s.numel()) == ((), 0, 1)
    assert pyburn.zeros((3, 0), device=check.device).numel() == 0


def test_iteration_gives_rows(check):
    t = pyburn.tensor([[1, 2], [3, 4], [5, 6]], device=check.device)
    assert [row.tolist() for row in t] == [[1, 2], [3, 4], [5, 6]]


@pytest.mark.parametrize("data,dtype,words", [
    ([[1.5, -2.0], [3.0, 4.25]], "float32", ["1.5", "-2.", "4.25"]),
    ([1, 2, 3], "int32", ["1", "2", "3"]),
    ([True, False], "bool", ["True", "False"]),
    (7.0, "float32", ["7."]),
    ([math.nan, math.inf], "float32", ["nan", "inf"]),
], ids=["floats", "ints", "bools", "0d", "special"])
def test_repr_shows_values_shape_dtype_device(check, data, dtype, words):
    t = pyburn.tensor(data, dtype=getattr(pyburn, dtype), device=check.device)
    text = repr(t)
    for word in [*words, str(t.shape), dtype, check.device.name]:
        assert word in text, f"{word!r} missing from {text!r}"


def test_repr_of_large_tensor_is_short(check):
    text = repr(pyburn.arange(100_000, device=check.device))
    assert len(text) < 400 and "99999" in text and "100000" in text


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float64", "float16", "int64",
                                   "uint8"])
def test_to_other_device_copies(check, other_device, dtype):
    check.require(dtype)
    if dtype not in ("float32", "int32", "bool", "uint8") and dtype not in other_device.caps:
        pytest.skip(f"{other_device} lacks {dtype}")
    t = pyburn.arange(12, device=check.device).reshape(3, 4).to(getattr(pyburn, dtype))
    view = t.transpose(0, 1)[::2]
    for moved in (view.to(other_device), view.to(other_device.name),
                  view.to(device=other_device)):
        assert (moved.device, moved.dtype, moved.shape) == (other_device, view.dtype, view.shape)
        assert moved.tolist() == view.tolist()
    back = view.to(other_device).to(check.device)
    assert back.device == check.device and back.tolist() == view.tolist()


def test_to_same_device_and_dtype_together(check):
    t = pyburn.tensor([1.7, -2.2], device=check.device)
    moved = t.to(check.device, pyburn.int32)
    assert (moved.device, moved.dtype, moved.tolist()) == (check.device, pyburn.int32, [1, -2])
    assert t.to(dtype=pyburn.float32).tolist() == t.tolist()
