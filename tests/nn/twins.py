"""The layer tests' one helper: a pyburn module next to its PyTorch twin.

``check_twin(device, ours, theirs, inputs)`` checks that both have the same ``repr`` (less
pyburn's parameter counts) and the same ``state_dict`` keys and shapes, loads PyTorch's
weights into pyburn's module through numpy (the way a user imports a checkpoint), then runs
both on the same inputs — PyTorch in float64, so the reference is exact to float64 — and
compares the outputs and the buffers (running statistics) after each step. Unless
``grad=False`` it then moves pyburn's module to the autodiff form of its device and compares
the gradients of every parameter and float input with PyTorch's, for a weighted sum of the
outputs.

PyTorch is the reference, so importing this module skips the tests where it is missing.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402  (torch, and so numpy, is present past this point)

import pyburn  # noqa: E402

from .functional.helpers import BALANCED, PERMISSIVE, STRICT, Tol  # noqa: E402
from .functional.helpers import assert_close as assert_close_flat  # noqa: E402

__all__ = ["BALANCED", "PERMISSIVE", "STRICT", "Tol", "assert_close", "check_twin", "inputs_for",
           "np", "strip_counts", "torch", "torch_state"]


def assert_close(got: Any, want: Any, tol: Tol, what: str) -> None:
    """The functional helpers' `assert_close` for arrays (numpy, or anything numpy takes):
    the same shape, then |got - want| <= abs + rel * |want| everywhere (NaN where NaN,
    infinities exactly), compared in float64."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert_close_flat(got.reshape(-1).tolist(), want.reshape(-1).tolist(), tol, what,
                      want.shape)


def strip_counts(text: str) -> str:
    """A pyburn module's repr without its "  # N params" annotations: PyTorch's repr."""
    return re.sub(r"  # [\d,]+ params", "", text)


def torch_state(module: Any) -> dict[str, np.ndarray]:
    """A PyTorch module's state_dict as numpy arrays (what pyburn's load_state_dict takes)."""
    return {k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}


def inputs_for(key: str, *shapes: tuple[int, ...], low: float = -2.0,
               high: float = 2.0) -> list[np.ndarray]:
    """float32 inputs of `shapes`, uniform in [low, high), seeded by `key`."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    return [rng.uniform(low, high, s).astype(np.float32) for s in shapes]


def _ours(a: Any, device: pyburn.Device, requires_grad: bool) -> Any:
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind == "f":
        return pyburn.tensor(a.astype(np.float32), device=device, requires_grad=requires_grad)
    return pyburn.tensor(a.astype(np.int32), device=device)


def _theirs(a: Any, requires_grad: bool) -> Any:
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind == "f":
        return torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)
    return torch.tensor(a.astype(np.int64))


def _listed(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _compare_outputs(got: Any, want: Any, tol: dict[str, Tol], what: str) -> None:
    gots, wants = _listed(got), _listed(want)
    assert len(gots) == len(wants), f"{what}: {len(gots)} outputs, PyTorch gave {len(wants)}"
    for k, (g, w) in enumerate(zip(gots, wants)):
        w = w.detach()
        if w.is_floating_point():
            assert_close(g.numpy(), w.numpy(), tol["float32"], f"{what}, output {k}")
        else:
            np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=f"{what}, output {k}")


def _compare_state(ours: pyburn.nn.Module, theirs: Any, tol: dict[str, Tol], what: str) -> None:
    mine = ours.state_dict()
    for key, want in torch_state(theirs).items():
        got = mine[key].numpy()
        if want.dtype.kind == "f":
            assert_close(got, want, tol["float32"], f"{what}: {key}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{what}: {key}")


def check_twin(device: pyburn.Device, ours: pyburn.nn.Module, theirs: Any,
               inputs: Sequence[Any], *,
               train: bool = False, steps: int = 1, tol: dict[str, Tol] = BALANCED,
               grad: bool = True, grad_tol: dict[str, Tol] = PERMISSIVE) -> None:
    """Check `ours` (a pyburn module on the plain `device`) against `theirs` (the equivalent
    PyTorch module, float32 as constructed) on `inputs` (numpy arrays, or other values passed
    as they are)."""
    assert strip_counts(repr(ours)) == repr(theirs)
    theirs = theirs.double()  # float32 weights are exact in float64
    mine = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
    wanted = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert list(mine.items()) == list(wanted.items()), "state_dict keys/shapes differ"
    result = ours.load_state_dict(torch_state(theirs))
    assert result.all_matched
    ours.train(train)
    theirs.train(train)
    for step in range(steps):
        got = ours(*[_ours(a, device, False) for a in inputs])
        with torch.no_grad():
            want = theirs(*[_theirs(a, False) for a in inputs])
        _compare_outputs(got, want, tol, f"step {step}")
        _compare_state(ours, theirs, tol, f"state after step {step}")
    if grad:
        _check_grads(ours, theirs, inputs, device.autodiff(), grad_tol)


def _check_grads(ours: pyburn.nn.Module, theirs: Any, inputs: Sequence[Any],
                 dev: pyburn.Device, tol: dict[str, Tol]) -> None:
    ours.to(dev)
    ours_in = [_ours(a, dev, True) for a in inputs]
    theirs_in = [_theirs(a, True) for a in inputs]
    got, want = _listed(ours(*ours_in)), _listed(theirs(*theirs_in))
    rng = np.random.default_rng(0)
    weights = [rng.uniform(-1, 1, tuple(w.shape)) for w in want]
    pairs = [(g, w, k) for g, w, k in zip(got, want, weights) if w.is_floating_point()]
    sum((g * pyburn.tensor(k.astype(np.float32), device=dev)).sum()
        for g, _, k in pairs).backward()
    sum((w * torch.tensor(k)).sum() for _, w, k in pairs).backward()
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        want_grad = grads[name].grad
        assert p.requires_grad, f"parameter {name} does not require grad on {dev.name}"
        got_grad = np.zeros(p.shape) if p.grad is None else p.grad.numpy()
        want_grad = np.zeros(p.shape) if want_grad is None else want_grad.numpy()
        assert_close(got_grad, want_grad, tol["float32"], f"gradient of {name}")
    for k, (a, b) in enumerate(zip(ours_in, theirs_in)):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            got_grad = np.zeros(a.shape) if a.grad is None else a.grad.numpy()
            want_grad = np.zeros(a.shape) if b.grad is None else b.grad.numpy()
            assert_close(got_grad, want_grad, tol["float32"], f"gradient of input {k}")
