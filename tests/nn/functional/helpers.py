"""The functional tests' one helper: the same inputs through pyburn and through PyTorch.

A test asks its `ref` fixture (a `TorchChecker`) for numpy inputs (`ref.floats(2, 3)`), then
calls ``ref.check(pyburn_fn, torch_fn, *args, **kwargs)``. Every numpy array among the
arguments becomes a pyburn tensor on the device under test (float32, int32 or bool) and a
PyTorch CPU tensor (float64 for floats, so the reference is exact to float64; int64 for
integers). Both functions run; every output is checked for shape, dtype and values (floats
within a named tolerance preset, integers exactly).

Then, unless ``grad=False``, the same call runs on the device's autodiff form with every float
input requiring grad (wrap an array in `Const` to keep it out), and the gradients of a
weighted sum of the float outputs (fixed random weights, so that no gradient is trivially
uniform) are compared with PyTorch's.

PyTorch is the reference, so importing this module skips the tests where it is missing
(the Pyodide run).
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402  (torch, and so numpy, is present past this point)
from conformance.helpers import BALANCED, PERMISSIVE, STRICT, Tol, raises, read_back  # noqa: E402

import pyburn  # noqa: E402

__all__ = ["BALANCED", "PERMISSIVE", "STRICT", "Const", "TorchChecker", "Tol", "raises",
           "read_back", "torch"]

GRAD_TOL = PERMISSIVE


@dataclass(frozen=True)
class Const:
    """A float input that never requires grad (targets, running statistics, masks)."""

    value: np.ndarray


class _Inputs:
    """The arguments of one call, with each numpy array (or `Const`) converted by one
    library's `make(array, requires_grad)`; `leaves` collects the inputs that require grad."""

    def __init__(self, args: tuple, kwargs: dict, make: Callable, grad: bool):
        self.leaves: list = []
        self.make, self.grad = make, grad
        self.args = [self._convert(a) for a in args]
        self.kwargs = {k: self._convert(v) for k, v in kwargs.items()}

    def _convert(self, v: Any) -> Any:
        if isinstance(v, Const):
            return self.make(v.value, False)
        if isinstance(v, np.ndarray):
            wants_grad = self.grad and v.dtype.kind == "f"
            t = self.make(v, wants_grad)
            if wants_grad:
                self.leaves.append(t)
            return t
        if isinstance(v, (list, tuple)) and any(isinstance(i, (np.ndarray, Const)) for i in v):
            return type(v)(self._convert(i) for i in v)
        return v

    def call(self, fn: Callable) -> Any:
        """`fn` applied to the converted arguments (PyTorch's advice on its own API, such as
        its broadcasting warnings, silenced)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*self.args, **self.kwargs)


def _pyburn_maker(device: pyburn.Device) -> Callable:
    def make(a: np.ndarray, requires_grad: bool) -> pyburn.Tensor:
        if a.dtype.kind == "f":
            return pyburn.tensor(a.astype(np.float32), device=device, requires_grad=requires_grad)
        return pyburn.tensor(a if a.dtype.kind == "b" else a.astype(np.int32), device=device)

    return make


def _torch_make(a: np.ndarray, requires_grad: bool) -> Any:
    if a.dtype.kind == "f":
        return torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)
    return torch.tensor(a if a.dtype.kind == "b" else a.astype(np.int64))


def _outputs(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def assert_close(got: np.ndarray, want: np.ndarray, tol: Tol, what: str) -> None:
    """|got - want| <= abs + rel * |want| everywhere (NaN where NaN, infinities exactly)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    got, want = got.astype(np.float64), want.astype(np.float64)
    same_special = (np.isnan(got) & np.isnan(want)) | ((got == want) & np.isinf(want))
    with np.errstate(invalid="ignore"):
        ok = same_special | (np.abs(got - want) <= tol.abs + tol.rel * np.abs(want))
    if not ok.all():
        bad = np.argwhere(~ok)[:6]
        shown = ", ".join(f"{tuple(i)}: got {got[tuple(i)]!r} expected {want[tuple(i)]!r}"
                          for i in bad)
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} values differ "
                             f"(tolerance {tol}): {shown}")


def _compare(got: Any, want: Any, tol: dict[str, Tol], device: pyburn.Device) -> None:
    gots, wants = _outputs(got), _outputs(want)
    assert len(gots) == len(wants), f"{len(gots)} outputs, PyTorch gave {len(wants)}"
    for k, (g, w) in enumerate(zip(gots, wants)):
        what = f"output {k}"
        assert isinstance(g, pyburn.Tensor), f"{what}: expected a pyburn.Tensor, got {g!r}"
        assert g.device == device, f"{what}: on {g.device}, expected {device}"
        w = w.detach()
        if w.is_floating_point():
            assert g.dtype is pyburn.float32, f"{what}: dtype {g.dtype}, expected float32"
            assert_close(g.numpy(), w.numpy(), tol["float32"], what)
        else:
            assert g.shape == tuple(w.shape), f"{what}: shape {g.shape}, expected {w.shape}"
            assert g.dtype.kind == ("b" if w.dtype == torch.bool else "i"), (
                f"{what}: dtype {g.dtype} for PyTorch's {w.dtype}")
            np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=what)


class TorchChecker:
    """Builds numpy inputs seeded by the test's id and checks pyburn against PyTorch."""

    def __init__(self, device: pyburn.Device, key: str):
        self.device = device
        self.key = key
        self.rng = np.random.default_rng(zlib.crc32(key.encode()))

    # ---- inputs
    def floats(self, *shape: int, low: float = -2.0, high: float = 2.0) -> np.ndarray:
        """Uniform float32 values in [low, high)."""
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def ints(self, *shape: int, low: int = 0, high: int = 10) -> np.ndarray:
        """Uniform integers in [low, high)."""
        return self.rng.integers(low, high, shape)

    def bools(self, *shape: int, p: float = 0.5) -> np.ndarray:
        """Booleans, each True with probability p."""
        return self.rng.random(shape) < p

    # ---- checks
    def check(self, fn: Callable, ref: Callable, *args: Any, tol: dict[str, Tol] = BALANCED,
              grad: bool = True, grad_tol: dict[str, Tol] = GRAD_TOL, **kwargs: Any) -> Any:
        """Run `fn` (pyburn) and `ref` (PyTorch) on the same inputs and compare the outputs,
        then, if `grad`, the gradients of a weighted sum of the float outputs. Returns
        pyburn's forward result."""
        got = _Inputs(args, kwargs, _pyburn_maker(self.device), grad=False).call(fn)
        want = _Inputs(args, kwargs, _torch_make, grad=False).call(ref)
        _compare(got, want, tol, self.device)
        if grad:
            self._check_grad(fn, ref, args, kwargs, grad_tol)
        return got

    def _check_grad(self, fn: Callable, ref: Callable, args: tuple, kwargs: dict,
                    tol: dict[str, Tol]) -> None:
        p_in = _Inputs(args, kwargs, _pyburn_maker(self.device.autodiff()), grad=True)
        t_in = _Inputs(args, kwargs, _torch_make, grad=True)
        if not t_in.leaves:
            return
        p_outs = [o for o in _outputs(p_in.call(fn)) if o.is_floating_point()]
        t_outs = [o for o in _outputs(t_in.call(ref)) if o.is_floating_point()]
        weights = [self.rng.uniform(-1, 1, tuple(o.shape)).astype(np.float32) for o in t_outs]
        p_loss = sum((o * pyburn.tensor(w, device=self.device.autodiff())).sum()
                     for o, w in zip(p_outs, weights))
        t_loss = sum((o * torch.tensor(w, dtype=torch.float64)).sum()
                     for o, w in zip(t_outs, weights))
        t_grads = torch.autograd.grad(t_loss, t_in.leaves, allow_unused=True)
        if p_loss.requires_grad:
            p_loss.backward()
        for k, (leaf, want) in enumerate(zip(p_in.leaves, t_grads)):
            got = np.zeros(leaf.shape) if leaf.grad is None else leaf.grad.numpy()
            want = np.zeros(leaf.shape) if want is None else want.numpy()
            assert_close(got, want, tol["float32"], f"gradient of float input {k}")
