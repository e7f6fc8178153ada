"""The functional tests' one helper: the same inputs through pyburn and through PyTorch.

A test asks its `ref` fixture (a `TorchChecker`) for inputs (`ref.floats(2, 3)`), then calls
``ref.check(pyburn_fn, torch_fn, *args, **kwargs)``. Each input is an `Input`: a shape, a kind
(float, int or bool) and row-major values held as plain Python (floats exactly float32 values),
drawn from a `random.Random` seeded with the test's id without its device part, so every
device and every platform sees the same numbers. Every `Input` among the arguments becomes a
pyburn tensor on the device under test (float32, int32 or bool) and a PyTorch CPU tensor
(float64 for floats, so the reference is exact to float64; int64 for integers). Both
functions run; every output is checked for shape, dtype and values (floats within a named
tolerance preset, integers and bools exactly).

Then, unless ``grad=False``, the same call runs on the device's autodiff form with every float
input requiring grad (wrap an input in `Const` to keep it out), and the gradients of a
weighted sum of the float outputs (fixed random weights, so that no gradient is trivially
uniform) are compared with PyTorch's.

Inside Pyodide neither numpy nor PyTorch exists. There PyTorch's results come from
``build/conformance-golden.json`` (``conformance.helpers.GOLDEN``), which every desktop run
merge-updates: each check's expected outputs and gradients are stored under the test's key
and the number of the check within the test.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import random
import struct
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.helpers import (
    BALANCED,
    GOLDEN,
    PERMISSIVE,
    STRICT,
    Tol,
    flatten,
    nest,
    numel,
    raises,
    read_back,
    round_to,
)

import pyburn

__all__ = ["BALANCED", "HAVE_TORCH", "PERMISSIVE", "STRICT", "TF", "Const", "Input",
           "TorchChecker", "Tol", "assert_close", "flatten", "raises", "read_back"]

GRAD_TOL = PERMISSIVE
HAVE_TORCH = importlib.util.find_spec("torch") is not None


class _Lazy:
    """A PyTorch module imported at its first use. Where PyTorch is absent (Pyodide) tests
    may still name its functions as references: they are never called, the golden file
    supplies their results."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if HAVE_TORCH:
            return getattr(importlib.import_module(self._name), attr)

        def absent(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"{self._name}.{attr} was called, but PyTorch is not installed")

        absent.__name__ = attr
        return absent


torch = _Lazy("torch")
TF = _Lazy("torch.nn.functional")


# ---- inputs ------------------------------------------------------------------------------

KINDS = ("float", "int", "bool")


def _cast(kind: str, value: Any) -> Any:
    if kind == "float":
        return round_to(float(value), "float32")
    return bool(value) if kind == "bool" else int(value)


class Input:
    """One tensor input as plain Python: `shape`, `kind` ("float", "int" or "bool") and the
    row-major flat list `values` (floats rounded to float32). Indexing with ints, slices and
    ``...`` reads and assigns as numpy's basic indexing does (a full index reads a number)."""

    def __init__(self, shape: tuple[int, ...], kind: str, values: Any):
        assert kind in KINDS, kind
        self.shape, self.kind = tuple(shape), kind
        self.values = [_cast(kind, v) for v in values]
        assert len(self.values) == numel(self.shape), f"{len(self.values)} values for {shape}"

    def __repr__(self) -> str:
        return f"Input({self.shape}, {self.kind!r}, {self.values!r})"

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def tolist(self) -> Any:
        """The values as nested lists of `shape` (a number for shape ())."""
        return nest(self.values, self.shape)

    def map(self, fn: Callable[[Any], Any], kind: str | None = None) -> Input:
        """`fn` applied to every value; the result has `kind` (default: this input's)."""
        return Input(self.shape, kind or self.kind, [fn(v) for v in self.values])

    def sum_to_one(self, dim: int) -> Input:
        """The values divided by their sum along `dim`: every slice along it sums to one."""
        dim %= self.ndim
        stride, size = numel(self.shape[dim + 1:]), self.shape[dim]
        bases = [p - (p // stride % size) * stride for p in range(len(self.values))]
        sums: dict[int, float] = {}
        for base, v in zip(bases, self.values):
            sums[base] = sums.get(base, 0.0) + v
        return Input(self.shape, "float", [v / sums[b] for b, v in zip(bases, self.values)])

    def _select(self, index: Any) -> tuple[tuple[int, ...], list[int], bool]:
        """The shape, the flat positions and whether every axis got an int, for `index`."""
        index = index if isinstance(index, tuple) else (index,)
        if any(i is Ellipsis for i in index):
            at = [i is Ellipsis for i in index].index(True)
            index = (*index[:at], *[slice(None)] * (self.ndim - len(index) + 1),
                     *index[at + 1:])
        if len(index) > self.ndim:
            raise IndexError(f"{len(index)} indices for shape {self.shape}")
        index = (*index, *[slice(None)] * (self.ndim - len(index)))
        axes, shape = [], []
        for i, n in zip(index, self.shape):
            if isinstance(i, slice):
                axes.append(range(n)[i])
                shape.append(len(axes[-1]))
            else:
                axes.append([range(n)[i]])
        strides = [numel(self.shape[k + 1:]) for k in range(self.ndim)]
        flat = [sum(p * s for p, s in zip(at, strides)) for at in itertools.product(*axes)]
        return tuple(shape), flat, len(shape) == 0

    def __getitem__(self, index: Any) -> Any:
        shape, flat, scalar = self._select(index)
        if scalar:
            return self.values[flat[0]]
        return Input(shape, self.kind, [self.values[p] for p in flat])

    def __setitem__(self, index: Any, value: Any) -> None:
        _, flat, _ = self._select(index)
        if isinstance(value, Input):
            value = value.values
        given = flatten(value) if isinstance(value, (list, tuple)) else [value] * len(flat)
        if len(given) != len(flat):
            raise ValueError(f"{len(given)} values for {len(flat)} places")
        for p, v in zip(flat, given):
            self.values[p] = _cast(self.kind, v)

    def to_pyburn(self, device: pyburn.Device, requires_grad: bool = False) -> pyburn.Tensor:
        """The input as a pyburn tensor on `device`: float32, int32 or bool."""
        n = len(self.values)
        if self.kind == "bool":
            data, dtype = bytes(self.values), pyburn.bool_
        else:
            char, dtype = ("f", pyburn.float32) if self.kind == "float" else ("i", pyburn.int32)
            data = struct.pack(f"<{n}{char}", *self.values)
        return pyburn.tensor(data, dtype=dtype, shape=self.shape, device=device,
                             requires_grad=requires_grad)

    def to_torch(self, requires_grad: bool = False) -> Any:
        """The input as a PyTorch CPU tensor: float64, int64 or bool (desktop only)."""
        dtype = {"float": torch.float64, "int": torch.int64, "bool": torch.bool}[self.kind]
        t = torch.tensor(self.values, dtype=dtype).reshape(self.shape)
        return t.requires_grad_() if requires_grad else t


def _kind_of(values: list) -> str:
    if any(isinstance(v, float) for v in values):
        return "float"
    return "bool" if values and all(isinstance(v, bool) for v in values) else "int"


def _shape_of(data: Any) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(data, (list, tuple)):
        shape.append(len(data))
        data = data[0] if data else None
    return tuple(shape)


@dataclass(frozen=True)
class Const:
    """A float input that never requires grad (targets, running statistics, masks)."""

    value: Input


class _Inputs:
    """The arguments of one call, with each `Input` (or `Const`) converted by one library's
    `make(input, requires_grad)`; `leaves` collects the inputs that require grad."""

    def __init__(self, args: tuple, kwargs: dict, make: Callable, grad: bool):
        self.leaves: list = []
        self.make, self.grad = make, grad
        self.args = [self._convert(a) for a in args]
        self.kwargs = {k: self._convert(v) for k, v in kwargs.items()}

    def _convert(self, v: Any) -> Any:
        if isinstance(v, Const):
            return self.make(v.value, False)
        if isinstance(v, Input):
            wants_grad = self.grad and v.kind == "float"
            t = self.make(v, wants_grad)
            if wants_grad:
                self.leaves.append(t)
            return t
        if isinstance(v, (list, tuple)) and any(isinstance(i, (Input, Const)) for i in v):
            return type(v)(self._convert(i) for i in v)
        return v

    def call(self, fn: Callable) -> Any:
        """`fn` applied to the converted arguments (PyTorch's advice on its own API, such as
        its broadcasting warnings, silenced)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*self.args, **self.kwargs)


def _torch_make(a: Input, requires_grad: bool) -> Any:
    return a.to_torch(requires_grad)


def _outputs(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _weights(seed: str, outputs: list[dict]) -> list[Input]:
    """The weights of the weighted sum, one per float output, uniform in [-1, 1)."""
    rng = random.Random(seed)
    return [Input(o["shape"], "float", [rng.uniform(-1, 1) for _ in range(numel(o["shape"]))])
            for o in outputs if o["kind"] == "float"]


# ---- PyTorch's results, JSON-ready for the golden file --------------------------------------

def _expected(t: Any) -> dict:
    """One PyTorch output as shape, kind and row-major values."""
    t = t.detach()
    kind = "float" if t.is_floating_point() else ("bool" if t.dtype == torch.bool else "int")
    return {"shape": list(t.shape), "kind": kind, "values": t.reshape(-1).tolist()}


def torch_reference(ref: Callable, args: tuple, kwargs: dict, grad: bool, seed: str) -> dict:
    """PyTorch's outputs of ``ref(*args, **kwargs)`` and, if `grad`, the gradients of the
    weighted sum of its float outputs with respect to every float input that is no `Const`
    (None for one that the outputs do not depend on)."""
    outputs = [_expected(o) for o in _outputs(_Inputs(args, kwargs, _torch_make, False).call(ref))]
    found: dict[str, Any] = {"outputs": outputs, "grads": None}
    if not grad:
        return found
    t_in = _Inputs(args, kwargs, _torch_make, grad=True)
    found["grads"] = []
    if t_in.leaves:
        t_outs = [o for o in _outputs(t_in.call(ref)) if o.is_floating_point()]
        t_loss = sum((o * w.to_torch()).sum() for o, w in zip(t_outs, _weights(seed, outputs)))
        t_grads = torch.autograd.grad(t_loss, t_in.leaves, allow_unused=True)
        found["grads"] = [None if g is None else g.reshape(-1).tolist() for g in t_grads]
    return found


# ---- comparing -----------------------------------------------------------------------------

def _close(got: float, want: float, tol: Tol) -> bool:
    if want != want:
        return got != got
    if math.isinf(want):
        return got == want
    return abs(got - want) <= tol.abs + tol.rel * abs(want)  # False for a NaN or inf got


def _at(i: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of flat position `i` in a row-major tensor of `shape`."""
    at = []
    for n in reversed(shape):
        i, r = divmod(i, n)
        at.append(r)
    return tuple(reversed(at))


def assert_close(got: list, want: list, tol: Tol, what: str,
                 shape: tuple[int, ...] | None = None) -> None:
    """|got - want| <= abs + rel * |want| for every pair of flat values (NaN where NaN,
    infinities exactly); `shape` only makes the message name indices."""
    assert len(got) == len(want), f"{what}: {len(got)} values, expected {len(want)}"
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if not _close(g, w, tol)]
    if bad:
        shown = ", ".join(f"{_at(i, shape) if shape else i}: got {got[i]!r} expected "
                          f"{want[i]!r}" for i in bad[:6])
        raise AssertionError(f"{what}: {len(bad)} of {len(want)} values differ "
                             f"(tolerance {tol}): {shown}")


def _compare(got: Any, wants: list[dict], tol: dict[str, Tol], device: pyburn.Device) -> None:
    gots = _outputs(got)
    assert len(gots) == len(wants), f"{len(gots)} outputs, PyTorch gave {len(wants)}"
    for k, (g, w) in enumerate(zip(gots, wants)):
        what = f"output {k}"
        assert isinstance(g, pyburn.Tensor), f"{what}: expected a pyburn.Tensor, got {g!r}"
        assert g.device == device, f"{what}: on {g.device}, expected {device}"
        shape = tuple(w["shape"])
        assert g.shape == shape, f"{what}: shape {g.shape}, expected {shape}"
        values = flatten(g.tolist())
        if w["kind"] == "float":
            assert g.dtype is pyburn.float32, f"{what}: dtype {g.dtype}, expected float32"
            assert_close(values, w["values"], tol["float32"], what, shape)
            continue
        assert g.dtype.kind == ("b" if w["kind"] == "bool" else "i"), (
            f"{what}: dtype {g.dtype} for PyTorch's {w['kind']}")
        bad = [i for i, (a, b) in enumerate(zip(values, w["values"])) if a != b]
        assert not bad, f"{what}: {len(bad)} of {len(values)} values differ: " + ", ".join(
            f"{_at(i, shape)}: got {values[i]!r} expected {w['values'][i]!r}" for i in bad[:6])


class TorchChecker:
    """Builds inputs seeded by the test's key and checks pyburn against PyTorch (or, where
    PyTorch is absent, against its results recorded in the golden file)."""

    def __init__(self, device: pyburn.Device, key: str):
        self.device = device
        self.key = key
        self.rng = random.Random(key)
        self._count = 0

    # ---- inputs
    def floats(self, *shape: int, low: float = -2.0, high: float = 2.0) -> Input:
        """Uniform float32 values in [low, high)."""
        return Input(shape, "float", [self.rng.uniform(low, high) for _ in range(numel(shape))])

    def ints(self, *shape: int, low: int = 0, high: int = 10) -> Input:
        """Uniform integers in [low, high)."""
        return Input(shape, "int", [self.rng.randrange(low, high) for _ in range(numel(shape))])

    def bools(self, *shape: int, p: float = 0.5) -> Input:
        """Booleans, each True with probability p."""
        return Input(shape, "bool", [self.rng.random() < p for _ in range(numel(shape))])

    def tensor(self, data: Any, kind: str | None = None) -> Input:
        """An input with the given values (nested lists or a number): float if any value is
        a float, bool if all are bools, int otherwise, unless `kind` says."""
        values = flatten(data)
        return Input(_shape_of(data), kind or _kind_of(values), values)

    # ---- checks
    def check(self, fn: Callable, ref: Callable, *args: Any, tol: dict[str, Tol] = BALANCED,
              grad: bool = True, grad_tol: dict[str, Tol] = GRAD_TOL, **kwargs: Any) -> Any:
        """Run `fn` (pyburn) and `ref` (PyTorch) on the same inputs and compare the outputs,
        then, if `grad`, the gradients of a weighted sum of the float outputs. Returns
        pyburn's forward result."""
        self._count += 1
        key = f"{self.key}#{self._count}"
        if HAVE_TORCH:
            want = torch_reference(ref, args, kwargs, grad, f"{key}/weights")
            GOLDEN.remember(key, want)
        else:
            want = GOLDEN.recall(key)
        got = _Inputs(args, kwargs, self._make(self.device), grad=False).call(fn)
        _compare(got, want["outputs"], tol, self.device)
        if grad and want["grads"]:
            self._check_grad(fn, args, kwargs, want, f"{key}/weights", grad_tol)
        return got

    @staticmethod
    def _make(device: pyburn.Device) -> Callable:
        return lambda a, requires_grad: a.to_pyburn(device, requires_grad)

    def _check_grad(self, fn: Callable, args: tuple, kwargs: dict, want: dict, seed: str,
                    tol: dict[str, Tol]) -> None:
        dev = self.device.autodiff()
        p_in = _Inputs(args, kwargs, self._make(dev), grad=True)
        p_outs = [o for o in _outputs(p_in.call(fn)) if o.is_floating_point()]
        p_loss = sum((o * w.to_pyburn(dev)).sum()
                     for o, w in zip(p_outs, _weights(seed, want["outputs"])))
        if p_loss.requires_grad:
            p_loss.backward()
        assert len(p_in.leaves) == len(want["grads"])
        for k, (leaf, grad) in enumerate(zip(p_in.leaves, want["grads"])):
            zeros = [0.0] * numel(leaf.shape)
            got = zeros if leaf.grad is None else flatten(leaf.grad.tolist())
            assert_close(got, zeros if grad is None else grad, tol["float32"],
                         f"gradient of float input {k}", leaf.shape)
