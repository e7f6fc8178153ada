"""The conformance suite's one test helper: the same inputs through pyburn and a reference.

A test asks its `check` fixture (an `OpChecker`) for inputs (`check.floats((3, 4))`), then
calls ``check.op(fn, *inputs, ref=...)``. The helper builds each input twice from one nested
Python list: as a pyburn tensor on the device under test and as a numpy array (float64 for
every float dtype, so the reference is exact to float64). It runs both and checks, for every
output, the shape, the dtype, the device and the values (NaN where NaN, inf where inf, floats
within a named tolerance preset for the result's dtype, everything else exactly).

Inside Pyodide numpy is absent. There the expected results come from
``build/conformance-golden.json``, which every desktop run with numpy merge-updates: each
reference result is stored under the test's node id (without the device part) and the
number of the check within the test. Inputs come from a `random.Random` seeded with that id,
so both platforms build the same inputs with no numpy involved.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from device_labels import label

import pyburn


class _NumpyAbsent:
    """Stands in for numpy where it is not installed (Pyodide): tests may still name numpy
    functions as references; they are never called, the golden file supplies the results."""

    def __getattr__(self, name: str) -> Callable:
        def absent(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"numpy.{name} was called, but numpy is not installed")

        return absent


try:
    import numpy as np
except ImportError:  # Pyodide: expected values come from the golden file instead
    np = _NumpyAbsent()

HAVE_NUMPY = not isinstance(np, _NumpyAbsent)
needs_numpy = pytest.mark.skipif(not HAVE_NUMPY, reason="needs numpy (absent, e.g. in Pyodide)")

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN_PATH = REPO_ROOT / "build" / "conformance-golden.json"

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("uint8", "int32", "int64")
# dtypes every device has; the others are capabilities a device lists in `caps`
BASE_DTYPES = ("bool", "uint8", "int32", "float32")


# ---- tolerances ------------------------------------------------------------------------

@dataclass(frozen=True)
class Tol:
    """|got - expected| <= abs + rel * |expected| for a float result."""

    rel: float
    abs: float


# Keyed by the result dtype. float32's unit roundoff is 6e-8 and float16's 4.9e-4, so STRICT
# allows a couple of roundings (exact ops, casts, max/min), BALANCED a short chain of them
# (libm-quality transcendental functions, composites, short dot products), PERMISSIVE
# accumulations whose error grows with their length and cancellation (sums, means, var/std,
# long dot products, float16 reductions).
STRICT = {"float16": Tol(1e-3, 1e-5), "float32": Tol(3e-7, 1e-7), "float64": Tol(1e-14, 1e-15)}
BALANCED = {"float16": Tol(4e-3, 1e-3), "float32": Tol(1e-5, 1e-6), "float64": Tol(1e-12, 1e-14)}
PERMISSIVE = {"float16": Tol(2e-2, 1e-2), "float32": Tol(2e-4, 2e-5), "float64": Tol(1e-9, 1e-12)}


def pb(name: str) -> Callable:
    """pyburn's function `name`, looked up when called: a table entry naming an op that is
    missing fails its own tests instead of the whole module's import."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(pyburn, name)(*args, **kwargs)

    call.__name__ = name
    return call


# ---- inputs ----------------------------------------------------------------------------

def numel(shape: tuple[int, ...]) -> int:
    """Number of elements of a tensor of `shape`."""
    return math.prod(shape)


def nest(flat: list, shape: tuple[int, ...]) -> Any:
    """Row-major nested lists of `shape` holding `flat` (a scalar for shape ())."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = numel(shape[1:])
    return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def flatten(value: Any) -> list:
    """The leaves of nested lists in row-major order (a scalar gives a one-item list)."""
    if not isinstance(value, (list, tuple)):
        return [value]
    out: list = []
    for item in value:
        out.extend(flatten(item))
    return out


def shape_of(data: Any) -> tuple[int, ...]:
    """The shape of rectangular nested lists."""
    shape: list[int] = []
    while isinstance(data, (list, tuple)):
        shape.append(len(data))
        if not data:
            break
        data = data[0]
    return tuple(shape)


def round_to(value: float, dtype: str) -> float:
    """`value` rounded to the nearest number that `dtype` holds (pure Python: no numpy)."""
    if dtype == "float64" or not math.isfinite(value):
        return float(value)
    char = "e" if dtype == "float16" else "f"
    return struct.unpack(char, struct.pack(char, value))[0]


def infer_dtype(data: Any) -> str:
    """The dtype pyburn gives nested Python lists: float32 if any float, else int32, or bool."""
    leaves = flatten(data)
    if any(isinstance(v, float) for v in leaves):
        return "float32"
    if leaves and all(isinstance(v, bool) for v in leaves):
        return "bool"
    return "int32"


@dataclass(frozen=True)
class View:
    """A way to make a non-contiguous input, written once for pyburn and once for numpy.

    `source_shape` maps the wanted shape to the shape of the contiguous tensor the view is
    taken of; `pyburn` and `numpy` take (tensor, wanted shape) and return the view.
    """

    name: str
    source_shape: Callable[[tuple[int, ...]], tuple[int, ...]]
    pyburn: Callable[[Any, tuple[int, ...]], Any]
    numpy: Callable[[Any, tuple[int, ...]], Any]


def _rotation(n: int) -> tuple[int, ...]:
    return (n - 1, *range(n - 1))


VIEWS = {v.name: v for v in (
    View("transposed", lambda s: (*s[:-2], s[-1], s[-2]),
         lambda t, s: t.transpose(-1, -2), lambda a, s: np.swapaxes(a, -1, -2)),
    View("permuted", lambda s: (*s[1:], s[0]),
         lambda t, s: t.permute(*_rotation(len(s))),
         lambda a, s: np.transpose(a, _rotation(len(s)))),
    View("stepped", lambda s: (*s[:-1], 2 * s[-1]),
         lambda t, s: t[..., ::2], lambda a, s: a[..., ::2]),
    View("sliced", lambda s: (s[0] + 2, *s[1:]),
         lambda t, s: t[1:s[0] + 1], lambda a, s: a[1:s[0] + 1]),
    View("expanded", lambda s: (1, *s[1:]),
         lambda t, s: t.expand(*s), lambda a, s: np.broadcast_to(a, s)),
)}


@dataclass(frozen=True)
class Arg:
    """One tensor input, held as nested Python lists so that it exists where numpy doesn't.

    `data` has `source_shape`; the optional `view` turns it into a non-contiguous tensor of
    `shape`.
    """

    data: Any
    shape: tuple[int, ...]
    dtype: str
    view: View | None = None

    @property
    def source_shape(self) -> tuple[int, ...]:
        """Shape of `data`, before the view."""
        return self.view.source_shape(self.shape) if self.view else self.shape

    def to_pyburn(self, device) -> Any:
        """The input as a pyburn tensor on `device`."""
        dtype = getattr(pyburn, self.dtype)
        shape = self.source_shape
        if numel(shape) == 0:  # nested lists cannot say (0, 3)
            t = pyburn.zeros(shape, dtype=dtype, device=device)
        else:
            t = pyburn.tensor(self.data, dtype=dtype, device=device)
        return self.view.pyburn(t, self.shape) if self.view else t

    def to_numpy(self) -> Any:
        """The input as a numpy array: float64 for every float dtype, the dtype itself else."""
        np_dtype = np.float64 if self.dtype in FLOAT_DTYPES else self.dtype
        a = np.array(self.data, dtype=np_dtype).reshape(self.source_shape)
        return self.view.numpy(a, self.shape) if self.view else a


def _convert(value: Any, to: Callable[[Arg], Any]) -> Any:
    """Replace each Arg in `value` (recursing into tuples and dicts) with `to(arg)`."""
    if isinstance(value, Arg):
        return to(value)
    if isinstance(value, tuple):
        return tuple(_convert(v, to) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, to) for k, v in value.items()}
    return value


def _arg_dtypes(value: Any) -> list[str]:
    if isinstance(value, Arg):
        return [value.dtype]
    if isinstance(value, (tuple, list)):
        return [d for v in value for d in _arg_dtypes(v)]
    if isinstance(value, dict):
        return _arg_dtypes(list(value.values()))
    return []


def _widest(names: list[str], kinds: tuple[str, ...]) -> str | None:
    order = ("bool", "uint8", "int32", "int64", "float16", "float32", "float64")
    found = [n for n in names if n in kinds]
    return max(found, key=order.index) if found else None


def default_result_dtype(ref_kind: str, input_dtypes: list[str]) -> str:
    """The dtype pyburn should give a result whose numpy reference has kind `ref_kind`.

    References run in float64 and numpy's int64, so their dtype says only the category:
    bool stays bool, a float result has the widest float input dtype (float32 if none: float
    ops on ints), an integer result the widest integer input dtype (int32 if none: indices,
    sums of bools).
    """
    if ref_kind == "b":
        return "bool"
    if ref_kind == "f":
        return _widest(input_dtypes, FLOAT_DTYPES) or "float32"
    return _widest(input_dtypes, INT_DTYPES) or "int32"


# ---- expected results and the golden file -------------------------------------------------

@dataclass(frozen=True)
class Expected:
    """One reference result: shape, pyburn dtype name and row-major values."""

    shape: tuple[int, ...]
    dtype: str
    values: list

    def to_json(self) -> dict:
        """A JSON-ready dict (NaN and infinities are written as JSON's NaN/Infinity)."""
        return {"shape": list(self.shape), "dtype": self.dtype, "values": self.values}

    @classmethod
    def from_json(cls, d: dict) -> Expected:
        """Inverse of `to_json`."""
        return cls(tuple(d["shape"]), d["dtype"], list(d["values"]))


class Golden:
    """Reference results recorded on the desktop and read back where numpy is absent."""

    def __init__(self, path: Path):
        self.path = path
        self.recorded: dict[str, list[dict]] = {}
        self._loaded: dict[str, list[dict]] | None = None

    def record(self, key: str, results: list[Expected]) -> None:
        """Remember the results of check `key` for `save`."""
        self.remember(key, [r.to_json() for r in results])

    def lookup(self, key: str) -> list[Expected]:
        """The recorded results of check `key`; skips the test when there are none."""
        return [Expected.from_json(d) for d in self.recall(key)]

    def remember(self, key: str, data: Any) -> None:
        """Remember JSON-ready `data` (another suite's references) under `key` for `save`."""
        self.recorded[key] = data

    def recall(self, key: str) -> Any:
        """What `remember` stored under `key` on the desktop; skips the test when the file
        has no such entry."""
        if self._loaded is None:
            try:
                self._loaded = json.loads(self.path.read_text())
            except FileNotFoundError:
                self._loaded = {}
        if not self._loaded:
            pytest.skip(f"numpy is absent and {self.path} is missing: run the conformance "
                        "suite once where numpy is installed to record the references")
        if key not in self._loaded:
            pytest.skip(f"numpy is absent and {self.path.name} has no entry {key!r}: rerun "
                        "the suite where numpy is installed")
        return self._loaded[key]

    def save(self) -> None:
        """Merge this session's records into the file, atomically (temp file, fsync, rename),
        under a lock: the desktop suite's parallel workers each merge their share."""
        if not self.recorded:
            return
        import fcntl  # POSIX only, and only the desktop run (with numpy) records

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                merged = json.loads(self.path.read_text())
            except (FileNotFoundError, ValueError):
                merged = {}
            merged.update(self.recorded)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            with open(tmp, "w") as f:
                json.dump(merged, f, sort_keys=True, separators=(",", ":"))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)


GOLDEN = Golden(GOLDEN_PATH)


def golden_key(node: pytest.Item) -> str:
    """The test's id without its device part: the same on every device and platform."""
    callspec = node.callspec
    name = label(callspec.params["device"])
    rest = callspec.id[len(name):]
    assert callspec.id.startswith(name) and rest[:1] in ("", "-"), (
        f"the device id must come first in {callspec.id!r}")
    params = rest[1:]
    return f"{Path(str(node.path)).name}::{node.originalname}" + (f"[{params}]" if params else "")


def reference_results(outputs: Any, input_dtypes: list[str], dtype: Any) -> list[Expected]:
    """Turn what a numpy reference returned (one array-like or a tuple of them) into
    `Expected` results; `dtype` (a name or a tuple of names) overrides the default rule."""
    items = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    names = dtype if isinstance(dtype, (tuple, list)) else [dtype] * len(items)
    results = []
    for item, name in zip(items, names, strict=True):
        a = np.asarray(item)
        name = name or default_result_dtype(a.dtype.kind, input_dtypes)
        values = a.ravel().tolist()
        cast = float if name in FLOAT_DTYPES else (bool if name == "bool" else int)
        values = [cast(v) for v in values]
        results.append(Expected(tuple(a.shape), name, values))
    return results


# ---- comparing -------------------------------------------------------------------------

def _close(got: Any, want: Any, tol: Tol | None) -> bool:
    if tol is None:  # integers and bools compare exactly, as Python ints and bools
        return type(got) is type(want) and got == want
    if type(got) is not float:
        return False
    if want != want:
        return got != got
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= tol.abs + tol.rel * abs(want)


def assert_matches(got: Any, want: Expected, tol: dict[str, Tol], device=None,
                   what: str = "result") -> None:
    """Assert that pyburn tensor `got` has `want`'s shape, dtype and values (and lives on
    `device` when given)."""
    assert isinstance(got, pyburn.Tensor), f"{what}: expected a pyburn.Tensor, got {got!r}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert got.dtype.name == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if device is not None:
        assert got.device == device, f"{what}: on {got.device}, expected {device}"
    values = flatten(got.tolist())
    assert len(values) == len(want.values), f"{what}: {len(values)} values for {want.shape}"
    preset = tol.get(want.dtype) if want.dtype in FLOAT_DTYPES else None
    bad = [i for i, (g, w) in enumerate(zip(values, want.values)) if not _close(g, w, preset)]
    if bad:
        shown = ", ".join(f"[{i}] got {values[i]!r} expected {want.values[i]!r}" for i in bad[:8])
        raise AssertionError(f"{what}: {len(bad)} of {len(values)} values differ "
                             f"(dtype {want.dtype}, tolerance {preset}): {shown}")


# ---- the fixture object ------------------------------------------------------------------

class OpChecker:
    """Builds inputs and checks pyburn ops on one device against the float64 reference.

    Tests get one from the `check` fixture; its random inputs are seeded by the test's id,
    so every device and every platform (numpy or not) sees the same numbers.
    """

    def __init__(self, device, key: str):
        self.device = device
        self.key = key
        self.rng = random.Random(key)
        self._count = 0

    # ---- capabilities
    def supports(self, dtype: str) -> bool:
        """Whether the device stores `dtype` (a name)."""
        return dtype in BASE_DTYPES or dtype in self.device.caps

    def require(self, *dtypes: str) -> None:
        """Skip the test on a device that lacks any of `dtypes`."""
        for name in dtypes:
            if not self.supports(name):
                pytest.skip(f"device {self.device.name} lacks {name} (not in its caps)")

    # ---- inputs
    def floats(self, shape: tuple[int, ...], dtype: str = "float32", low: float = -2.0,
               high: float = 2.0, view: str | None = None) -> Arg:
        """Uniform random floats in [low, high), exactly representable in `dtype`."""
        return self._make(shape, dtype, view,
                          lambda: round_to(self.rng.uniform(low, high), dtype))

    def ints(self, shape: tuple[int, ...], dtype: str = "int32", low: int = -9, high: int = 10,
             view: str | None = None) -> Arg:
        """Uniform random integers in [low, high)."""
        return self._make(shape, dtype, view, lambda: self.rng.randrange(low, high))

    def bools(self, shape: tuple[int, ...], p: float = 0.5, view: str | None = None) -> Arg:
        """Random booleans, each True with probability `p`."""
        return self._make(shape, "bool", view, lambda: self.rng.random() < p)

    def values(self, shape: tuple[int, ...], dtype: str, view: str | None = None) -> Arg:
        """Random inputs of any dtype: floats in [-2, 2), ints in [-9, 10) (uint8 in
        [0, 20)), bools."""
        if dtype in FLOAT_DTYPES:
            return self.floats(shape, dtype, view=view)
        if dtype == "bool":
            return self.bools(shape, view=view)
        return self.ints(shape, dtype, 0 if dtype == "uint8" else -9, 10, view=view)

    def tensor(self, data: Any, dtype: str | None = None) -> Arg:
        """An input with the given values (nested lists or a scalar)."""
        dtype = dtype or infer_dtype(data)
        if dtype in FLOAT_DTYPES:
            data = nest([round_to(float(v), dtype) for v in flatten(data)], shape_of(data))
        return Arg(data, shape_of(data), dtype)

    def _make(self, shape: tuple[int, ...], dtype: str, view: str | None,
              draw: Callable[[], Any]) -> Arg:
        chosen = VIEWS[view] if view else None
        source = chosen.source_shape(shape) if chosen else shape
        data = nest([draw() for _ in range(numel(source))], source) if numel(source) else []
        return Arg(data, tuple(shape), dtype, chosen)

    # ---- checks
    def op(self, fn: Callable, *args: Any, ref: Callable | None = None,
           tol: dict[str, Tol] = BALANCED, dtype: Any = None) -> Any:
        """Run `fn` on pyburn versions of `args` and `ref` (default: `fn` itself) on numpy
        versions, and assert that every output matches. Returns pyburn's result.

        Args are `Arg`s (from `floats`, `ints`, ...; also inside tuples) or plain Python
        values passed to both unchanged. `dtype` names the expected result dtype (a tuple
        for several outputs) where the default rule (`default_result_dtype`) does not fit.
        """
        self._count += 1
        key = f"{self.key}#{self._count}"
        if HAVE_NUMPY:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "mean of empty"
                outputs = (ref or fn)(*_convert(args, Arg.to_numpy))
            expected = reference_results(outputs, _arg_dtypes(args), dtype)
            GOLDEN.record(key, expected)
        else:
            expected = GOLDEN.lookup(key)
        got = fn(*_convert(args, lambda a: a.to_pyburn(self.device)))
        got_items = list(got) if isinstance(got, (tuple, list)) else [got]
        assert len(got_items) == len(expected), (
            f"{len(got_items)} outputs, the reference gave {len(expected)}")
        for i, (g, e) in enumerate(zip(got_items, expected)):
            assert_matches(g, e, tol, self.device, what=f"check {self._count} output {i}")
        return got


# ---- errors ------------------------------------------------------------------------------

def read_back(result: Any) -> Any:
    """Read every tensor in `result` (a tensor or a tuple of them) and return it: a GPU
    reports an index out of range at the next read rather than at the call (docs/api.md,
    "Indexing"), so a test of bad input reads what the call returned."""
    for item in result if isinstance(result, tuple) else (result,):
        if isinstance(item, pyburn.Tensor):
            item.tolist()
    return result


class raises:
    """``with raises(pyburn.ShapeError, "2, 3", "4, 5"):`` — the block must raise that class,
    and its message must contain every word (a tuple of words means any one of them),
    case-insensitively."""

    def __init__(self, error: type[BaseException], *words: str | tuple[str, ...]):
        self.error = error
        self.words = words
        self._raises = pytest.raises(error)

    def __enter__(self) -> Any:
        return self._raises.__enter__()

    def __exit__(self, *exc: Any) -> bool:
        suppressed = self._raises.__exit__(*exc)
        if not suppressed:  # the wrong exception class: let it propagate as it is
            return False
        message = str(self._raises.excinfo.value).lower()
        for word in self.words:
            options = word if isinstance(word, tuple) else (word,)
            assert any(o.lower() in message for o in options), (
                f"error message {message!r} does not mention {' or '.join(options)!r}")
        return suppressed
