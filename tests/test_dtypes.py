"""The promotion table and dtype lookup."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.dtypes import ALL_DTYPES, as_dtype, promote, promote_with_scalar


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("bool", "bool", "bool"), ("bool", "uint8", "uint8"), ("uint8", "int32", "int32"),
    ("int32", "int64", "int64"), ("int64", "float16", "float16"),
    ("float16", "float32", "float32"), ("float32", "float64", "float64"),
    ("int32", "float32", "float32"), ("bool", "float16", "float16"),
])
def test_promote_is_symmetric_and_follows_the_lattice(a, b, expected):
    assert promote(as_dtype(a), as_dtype(b)).name == expected
    assert promote(as_dtype(b), as_dtype(a)).name == expected


@pytest.mark.parametrize(("dtype", "scalar", "expected"), [
    ("int32", 1, "int32"), ("uint8", 300, "uint8"), ("int32", 1.5, "float32"),
    ("float16", 2.0, "float16"), ("float64", 1, "float64"), ("bool", True, "bool"),
    ("bool", 2, "int32"), ("bool", 0.5, "float32"), ("int64", True, "int64"),
])
def test_python_scalars_are_weak(dtype, scalar, expected):
    assert promote_with_scalar(as_dtype(dtype), scalar).name == expected


def test_dtype_lookup_accepts_names_aliases_and_python_types():
    assert as_dtype("float") is pyburn.float32
    assert as_dtype(float) is pyburn.float32
    assert as_dtype(int) is pyburn.int32
    assert as_dtype(bool) is pyburn.bool
    assert {as_dtype(d.name) for d in ALL_DTYPES} == set(ALL_DTYPES)
    with pytest.raises(pyburn.DTypeError, match="complex64"):
        as_dtype("complex64")
