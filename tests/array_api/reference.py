"""What the array API conformance suite shares: the reference (array_api_strict, the
standard's reference implementation, held to the 2024.12 revision), the devices it runs on,
how values cross into each namespace, and how results are compared.

The official suite (array-api-tests) is not on PyPI and cannot be fetched here, so
test_conformance.py compares pyburn.array_api with array_api_strict function by function on
inputs drawn by hypothesis (few examples, derandomized: the same inputs every run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import pyburn

strict = pytest.importorskip("array_api_strict")
strict.set_array_api_strict_flags(api_version="2024.12")

#: the devices the suite runs on (the pure-Python and the numpy backends)
DEVICES = [pyburn.device(name) for name in ("cpu", "flex")]
#: a result dtype the reference chose by its defaults (int64, float64; uint64 for sums of
#: unsigned ints) stands for pyburn's default, where no input had that dtype
DEFAULTS = {"int64": "int32", "float64": "float32", "uint64": "int32"}


@dataclass(frozen=True)
class Dt:
    """A dtype named in a case's arguments, made the namespace's own dtype on each side."""

    name: str


def to_namespace(value: Any, namespace: Any, device: Any) -> Any:
    """`value` with its numpy arrays made `namespace`'s arrays (on `device`) and its `Dt`s
    the namespace's dtypes; lists and tuples are converted item by item."""
    if isinstance(value, np.ndarray):
        return namespace.asarray(value, device=device)
    if isinstance(value, Dt):
        return getattr(namespace, value.name)
    if isinstance(value, (list, tuple)):
        return type(value)(to_namespace(v, namespace, device) for v in value)
    return value


def run(namespace: Any, path: str, args: tuple, kwargs: dict, device: Any) -> Any:
    """Call the function at `path` ("sum", "linalg.svd") of `namespace`."""
    fn: Any = namespace
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn(*to_namespace(args, namespace, device), **to_namespace(kwargs, namespace, device))


def as_numpy(value: Any) -> Any:
    """A result as numpy arrays, names and plain values, to compare."""
    if isinstance(value, pyburn.Tensor):
        return np.asarray(value)
    if isinstance(value, strict._array_object.Array):
        return np.from_dlpack(value)
    if isinstance(value, (list, tuple)):
        return [as_numpy(v) for v in value]
    if hasattr(value, "bits"):  # finfo, iinfo
        return {k: as_numpy(getattr(value, k)) for k in ("bits", "eps", "max", "min",
                                                          "smallest_normal", "dtype")
                if hasattr(value, k)}
    return str(value).split(".")[-1] if _is_dtype(value) else value


def _is_dtype(value: Any) -> bool:
    return isinstance(value, (pyburn.DType, strict._dtypes.DType))


def expected_dtype(reference: np.ndarray, inputs: set[str]) -> str:
    """The dtype pyburn should give where the reference gave `reference`'s."""
    name = reference.dtype.name
    return DEFAULTS[name] if name in DEFAULTS and name not in inputs else name


def input_dtypes(value: Any) -> set[str]:
    """The dtype names of a case's arrays and `Dt`s."""
    if isinstance(value, np.ndarray):
        return {value.dtype.name}
    if isinstance(value, Dt):
        return {value.name}
    if isinstance(value, (list, tuple)):
        return set().union(*(input_dtypes(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return input_dtypes(list(value.values()))
    return set()


def assert_same(got: Any, want: Any, inputs: set[str], rtol: float, atol: float) -> None:
    """`got` (pyburn's result) equals `want` (the reference's): shapes, dtypes (through
    `DEFAULTS`) and values within the tolerances, NaN where NaN."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"got {type(got).__name__}, want an array"
        assert got.shape == want.shape, f"shape {got.shape}, want {want.shape}"
        assert got.dtype.name == expected_dtype(want, inputs), \
            f"dtype {got.dtype.name}, want {expected_dtype(want, inputs)}"
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)
    elif isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, inputs, rtol, atol)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for key in want:
            if key != "dtype":
                np.testing.assert_allclose(got[key], want[key], rtol=rtol)
        assert got["dtype"] == want["dtype"]
    elif isinstance(want, float):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        named = isinstance(want, str) and want not in inputs
        assert got == (DEFAULTS.get(want, want) if named else want)

