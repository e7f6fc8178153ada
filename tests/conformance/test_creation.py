"""Creating tensors: from data, filled, ranges, identity, and the *_like family."""

from __future__ import annotations

import struct

import pytest

import pyburn

from .helpers import STRICT, needs_numpy, np, pb


@pytest.mark.parametrize("data,dtype", [
    ([[1, 2, 3], [4, 5, 6]], "int32"),
    ([[1.5, 2.0], [-3.25, 4.0]], "float32"),
    ([1, 2.5, 3], "float32"),
    ([[True, False, True]], "bool"),
    (7, "int32"),
    (2.5, "float32"),
    (False, "bool"),
    ([[[1], [2]], [[3], [4]]], "int32"),
], ids=["ints", "floats", "mixed", "bools", "int-scalar", "float-scalar", "bool-scalar", "3d"])
def test_tensor_infers_dtype(check, data, dtype):
    """Python ints become int32, floats float32, bools bool: the same on every device."""
    check.op(lambda: pyburn.tensor(data, device=check.device), ref=lambda: np.array(data),
             dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                   "bool"])
def test_tensor_with_dtype(check, dtype):
    check.require(dtype)
    data = [[0, 1, 2], [3, 4, 5]]
    check.op(lambda: pyburn.tensor(data, dtype=getattr(pyburn, dtype), device=check.device),
             ref=lambda: np.array(data).astype(dtype), dtype=dtype)


def test_tensor_of_empty_list(check):
    t = pyburn.tensor([], device=check.device)
    assert t.shape == (0,)
    assert t.dtype == pyburn.float32
    assert t.tolist() == []


@pytest.mark.parametrize("fmt,dtype", [("<f", "float32"), ("<i", "int32"), ("<d", "float64"),
                                        ("<B", "uint8"), ("<e", "float16"), ("<q", "int64")])
def test_tensor_from_bytes(check, fmt, dtype):
    check.require(dtype)
    values = [1, 2, 3, 4, 5, 6]
    raw = b"".join(struct.pack(fmt, v) for v in values)
    t = pyburn.tensor(raw, shape=(2, 3), dtype=getattr(pyburn, dtype), device=check.device)
    assert (t.shape, t.dtype.name, t.device) == ((2, 3), dtype, check.device)
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]


@pytest.mark.parametrize("fmt,dtype", [("f", "float32"), ("i", "int32"), ("d", "float64"),
                                        ("B", "uint8"), ("q", "int64"), ("?", "bool")])
def test_tensor_from_typed_memoryview(check, fmt, dtype):
    # how a web page's typed arrays arrive in Python: a memoryview of their element format
    check.require(dtype)
    values = [1, 0, 1, 1, 0, 1] if dtype == "bool" else [1, 2, 3, 4, 5, 6]
    view = memoryview(b"".join(struct.pack("<" + fmt, v) for v in values)).cast(fmt)
    flat = pyburn.tensor(view, device=check.device)
    assert (flat.shape, flat.dtype.name) == ((6,), dtype)
    assert flat.tolist() == [bool(v) if dtype == "bool" else v for v in values]
    shaped = pyburn.tensor(view.cast("B").cast(fmt, (2, 3)), device=check.device)
    assert shaped.shape == (2, 3)
    assert pyburn.tensor(view, shape=(3, 2), device=check.device).shape == (3, 2)
    converted = pyburn.tensor(view, dtype="float32", device=check.device)
    assert converted.dtype == pyburn.float32
    assert converted.tolist() == [float(v) for v in values]


def test_tensor_from_memoryview_of_unknown_format(check):
    with pytest.raises(pyburn.DTypeError, match="format 'h'"):
        pyburn.tensor(memoryview(struct.pack("<2h", 1, 2)).cast("h"), device=check.device)


@needs_numpy
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool",
                                   "float16"])
def test_from_numpy_keeps_dtype(check, dtype):
    check.require(dtype)
    a = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    for t in (pyburn.from_numpy(a, device=check.device), pyburn.tensor(a, device=check.device)):
        assert (t.shape, t.dtype.name, t.device) == ((3, 4), dtype, check.device)
        assert t.tolist() == a.tolist()


@needs_numpy
def test_from_numpy_non_contiguous(check):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(2, 0, 1)[::2]
    assert pyburn.from_numpy(a, device=check.device).tolist() == a.tolist()


FILLED = {
    "zeros": (pb("zeros"), lambda shape: np.zeros(shape)),
    "ones": (pb("ones"), lambda shape: np.ones(shape)),
}


@pytest.mark.parametrize("shape", [(2, 3), (4,), (), (0, 3), (2, 0, 1)], ids=str)
@pytest.mark.parametrize("name", FILLED)
def test_zeros_ones(check, name, shape):
    fn, ref = FILLED[name]
    check.op(lambda: fn(shape, device=check.device), ref=lambda: ref(shape))
    if shape:
        check.op(lambda: fn(*shape, device=check.device), ref=lambda: ref(shape))
    check.op(lambda: fn(shape, dtype=pyburn.int32, device=check.device),
             ref=lambda: ref(shape).astype(np.int32))
    check.op(lambda: fn(shape, dtype=pyburn.bool, device=check.device),
             ref=lambda: ref(shape).astype(bool))


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float64"])
def test_empty_has_shape_and_dtype(check, dtype):
    check.require(dtype)
    for t in (pyburn.empty(2, 3, dtype=getattr(pyburn, dtype), device=check.device),
              pyburn.empty((2, 3), dtype=getattr(pyburn, dtype), device=check.device)):
        assert (t.shape, t.dtype.name, t.device) == ((2, 3), dtype, check.device)


@pytest.mark.parametrize("value,dtype,expected", [
    (2.5, None, "float32"),
    (7, None, "int32"),
    (True, None, "bool"),
    (3, "float32", "float32"),
    (-1.5, "float16", "float16"),
    (300, "int64", "int64"),
])
def test_full(check, value, dtype, expected):
    """Without a dtype, full takes the default dtype of its value's Python type."""
    check.require(expected)
    kwargs = {"dtype": getattr(pyburn, dtype)} if dtype else {}
    check.op(lambda: pyburn.full((2, 3), value, device=check.device, **kwargs),
             ref=lambda: np.full((2, 3), value), dtype=expected)


LIKE = {
    "zeros_like": (lambda t, **k: pyburn.zeros_like(t, **k), lambda a: np.zeros(a.shape)),
    "ones_like": (lambda t, **k: pyburn.ones_like(t, **k), lambda a: np.ones(a.shape)),
    "full_like": (lambda t, **k: pyburn.full_like(t, 3, **k), lambda a: np.full(a.shape, 3)),
}


@pytest.mark.parametrize("source", ["float32", "int32", "bool", "float16"])
@pytest.mark.parametrize("name", LIKE)
def test_like_keeps_shape_dtype_device(check, name, source):
    check.require(source)
    fn, ref = LIKE[name]
    x = check.values((2, 4), source)
    check.op(fn, x, ref=lambda a: ref(a), dtype=source)
    check.op(lambda t: fn(t, dtype=pyburn.float32), x, ref=lambda a: ref(a), dtype="float32")


def test_empty_like(check):
    src = pyburn.ones((3, 2), dtype=pyburn.int32, device=check.device)
    t = pyburn.empty_like(src)
    assert (t.shape, t.dtype, t.device) == ((3, 2), pyburn.int32, check.device)


ARANGES = [
    ((5,), {}, "int32"),
    ((2, 9), {}, "int32"),
    ((2, 9, 3), {}, "int32"),
    ((10, 0, -3), {}, "int32"),
    ((5, 0), {}, "int32"),
    ((0.0, 1.0, 0.125), {}, "float32"),
    ((1, 2.5, 0.5), {}, "float32"),
    ((-1.0, 1.0, 0.3), {}, "float32"),
    ((4,), {"dtype": "float32"}, "float32"),
    ((0, 1, 0.1), {"dtype": "float64"}, "float64"),
]


@pytest.mark.parametrize("args,kwargs,expected", ARANGES, ids=[str(a[0]) for a in ARANGES])
def test_arange(check, args, kwargs, expected):
    """arange computes start + i * step (no accumulated rounding), torch's number of steps."""
    check.require(expected)
    kw = {k: getattr(pyburn, v) for k, v in kwargs.items()}
    check.op(lambda: pyburn.arange(*args, device=check.device, **kw),
             ref=lambda: np.arange(*args, dtype=np.float64 if expected[0] == "f" else np.int64),
             dtype=expected)


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-2, 3, 11), (1, 1, 3), (2, -2, 1),
                                             (0, 1, 0), (3, 7, 2)])
def test_linspace(check, start, end, steps):
    check.op(lambda: pyburn.linspace(start, end, steps, device=check.device),
             ref=lambda: np.linspace(start, end, steps), dtype="float32", tol=STRICT)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (1,)], ids=str)
def test_eye(check, args):
    check.op(lambda: pyburn.eye(*args, device=check.device), ref=lambda: np.eye(*args),
             dtype="float32")


def test_created_tensors_live_on_the_requested_device(check):
    d = check.device
    made = [pyburn.tensor([1.0], device=d), pyburn.zeros(2, device=d), pyburn.ones(2, device=d),
            pyburn.full((2,), 1.0, device=d), pyburn.arange(3, device=d),
            pyburn.linspace(0, 1, 3, device=d), pyburn.eye(2, device=d),
            pyburn.rand(2, device=d), pyburn.randn(2, device=d),
            pyburn.randint(0, 5, (2,), device=d), pyburn.empty(2, device=d)]
    assert [t.device for t in made] == [d] * len(made)
    made_from = pyburn.zeros_like(made[0])
    assert made_from.device == d


def test_device_accepts_a_name(check):
    t = pyburn.zeros(2, device=check.device.name)
    assert t.device == check.device

