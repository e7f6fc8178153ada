"""The twin check of `twins.check_twin` for layers called with keyword arguments, bool masks
and nested states: recurrent layers (``lstm(x, (h0, c0))`` returns ``(out, (h_n, c_n))``) and
attention layers (``mha(q, k, v, key_padding_mask=..., need_weights=False)``).

``check_sequence_twin(device, ours, theirs, args, kwargs)`` checks that the repr (less
pyburn's parameter counts, and with PyTorch's quantisation marker class
``NonDynamicallyQuantizableLinear`` read as ``Linear``) and the state_dict keys and shapes
equal PyTorch's, loads PyTorch's weights into `ours` through numpy, runs both on
the same inputs (PyTorch in float64) and compares every output, nested or not (None where
PyTorch gives None). Unless ``grad=False`` it then moves `ours` to the autodiff form of the
device and compares the gradients of a randomly weighted sum of the outputs with respect to
every parameter and every float input (an input wrapped in `Const`, such as a float mask,
stays out).

Inputs are numpy arrays: floats become float32 pyburn tensors and float64 PyTorch tensors,
bools become bool tensors on both sides. One array passed twice becomes one tensor passed
twice, so ``args=(x, x, x)`` exercises self-attention's shared-input path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402  (torch, and so numpy, is present past this point)

import pyburn  # noqa: E402

from .twins import (  # noqa: E402
    BALANCED,
    PERMISSIVE,
    Tol,
    assert_close,
    strip_counts,
    torch_state,
)

__all__ = ["BALANCED", "PERMISSIVE", "Const", "check_sequence_twin", "flat", "np", "torch"]


@dataclass(frozen=True)
class Const:
    """A float input that never requires grad (a float mask)."""

    value: np.ndarray


class _Converter:
    """Turns nested arguments into one library's tensors; `leaves` collects the inputs that
    require grad, in order; the same array always gives the same tensor."""

    def __init__(self, make: Callable[[np.ndarray, bool], Any], grad: bool):
        self.make, self.grad = make, grad
        self.leaves: list = []
        self.memo: dict[int, Any] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, Const):
            return self.make(value.value, False)
        if isinstance(value, np.ndarray):
            if id(value) not in self.memo:
                wants = self.grad and value.dtype.kind == "f"
                self.memo[id(value)] = t = self.make(value, wants)
                if wants:
                    self.leaves.append(t)
            return self.memo[id(value)]
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        return value


def _make_ours(device: pyburn.Device) -> Callable[[np.ndarray, bool], Any]:
    def make(a: np.ndarray, requires_grad: bool) -> pyburn.Tensor:
        if a.dtype.kind == "f":
            return pyburn.tensor(a.astype(np.float32), device=device, requires_grad=requires_grad)
        return pyburn.tensor(a, device=device)

    return make


def _make_theirs(a: np.ndarray, requires_grad: bool) -> Any:
    if a.dtype.kind == "f":
        return torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad)
    return torch.tensor(a)


def flat(value: Any) -> list:
    """The tensors (and Nones) of a nested output, depth first."""
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in flat(v)]
    return [value]


def _call(module: Any, convert: _Converter, args: Sequence[Any], kwargs: dict) -> list:
    return flat(module(*convert(tuple(args)), **{k: convert(v) for k, v in kwargs.items()}))


def check_sequence_twin(device: pyburn.Device, ours: pyburn.nn.Module, theirs: Any,
                        args: Sequence[Any], kwargs: dict | None = None, *, train: bool = False,
                        tol: dict[str, Tol] = BALANCED, grad: bool = True,
                        grad_tol: dict[str, Tol] = PERMISSIVE) -> list:
    """Check `ours` (on the plain `device`) against `theirs` (its PyTorch twin, float32 as
    constructed); returns pyburn's outputs, flattened."""
    kwargs = kwargs or {}
    assert strip_counts(repr(ours)) == repr(theirs).replace("NonDynamicallyQuantizableLinear",
                                                            "Linear")
    theirs = theirs.double()  # float32 weights are exact in float64
    mine = [(k, tuple(v.shape)) for k, v in ours.state_dict().items()]
    wanted = [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]
    assert mine == wanted, f"state_dict keys/shapes differ:\n{mine}\n{wanted}"
    ours.load_state_dict(torch_state(theirs))
    ours.train(train)
    theirs.train(train)
    got = _call(ours, _Converter(_make_ours(device), False), args, kwargs)
    # PyTorch runs with its parameters requiring grad: that keeps it off its inference fast
    # path (nested tensors give 0 at padded positions; the reference semantics do not)
    want = _call(theirs, _Converter(_make_theirs, False), args, kwargs)
    assert len(got) == len(want), f"{len(got)} outputs, PyTorch gave {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert (g is None) == (w is None), f"output {k}: {g!r} where PyTorch gave {w!r}"
        if w is not None:
            assert g.device is device, f"output {k} on {g.device.name}, expected {device.name}"
            assert_close(g.numpy(), w.detach().numpy(), tol["float32"], f"output {k}")
    if grad:
        _check_grads(ours, theirs, args, kwargs, device.autodiff(), grad_tol)
    return got


def _check_grads(ours: pyburn.nn.Module, theirs: Any, args: Sequence[Any], kwargs: dict,
                 dev: pyburn.Device, tol: dict[str, Tol]) -> None:
    ours.to(dev)
    theirs.zero_grad()
    mine, other = _Converter(_make_ours(dev), True), _Converter(_make_theirs, True)
    got, want = _call(ours, mine, args, kwargs), _call(theirs, other, args, kwargs)
    rng = np.random.default_rng(0)
    pairs = [(g, w, rng.uniform(-1, 1, tuple(w.shape))) for g, w in zip(got, want)
             if w is not None]
    sum((g * pyburn.tensor(k.astype(np.float32), device=dev)).sum()
        for g, _, k in pairs).backward()
    sum((w * torch.tensor(k)).sum() for _, w, k in pairs).backward()
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert p.requires_grad, f"parameter {name} does not require grad on {dev.name}"
        expected = theirs_params[name].grad
        assert_close(np.zeros(p.shape) if p.grad is None else p.grad.numpy(),
                     np.zeros(p.shape) if expected is None else expected.numpy(),
                     tol["float32"], f"gradient of {name}")
    for k, (a, b) in enumerate(zip(mine.leaves, other.leaves)):
        assert_close(np.zeros(a.shape) if a.grad is None else a.grad.numpy(),
                     np.zeros(a.shape) if b.grad is None else b.grad.numpy(),
                     tol["float32"], f"gradient of input {k}")
