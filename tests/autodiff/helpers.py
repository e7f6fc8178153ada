"""The autodiff tests' machinery: one table of cases, run through pyburn and through PyTorch.

A `Case` is a function of a *library* and some float tensors. The library is `PyburnLib` (pyburn
on the device under test) or `TorchLib` (PyTorch CPU, float64): both expose the names the
cases use (``L.cat``, ``L.where``, ...) and smooth over the few places where the two APIs
differ (index tensors, padding, norms). `evaluate` builds the same inputs for either library,
forms a weighted sum of the case's float outputs (random weights, so that no gradient is
trivially uniform) and returns the outputs, the gradients and, on request, a Hessian-vector
product. `gradcheck` compares pyburn's gradients with central finite differences.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from conformance.helpers import PERMISSIVE, Tol, flatten, nest, numel, round_to

import pyburn

# Gradients are longer chains than forward ops (the rule of every op on the way, then the
# weighted sum), so they are compared with the conformance suite's PERMISSIVE preset. Cases
# that pass through float32 on purpose (casts) use FLOAT32 whatever the compute dtype.
GRAD_TOL = PERMISSIVE
FLOAT32 = {"float32": PERMISSIVE["float32"], "float64": PERMISSIVE["float32"]}
# Central differences with step 1e-6 in float64: truncation ~1e-12, rounding ~1e-10 * |loss|.
FD_TOL = Tol(rel=1e-5, abs=1e-6)
FD_EPS = 1e-6


@dataclass(frozen=True)
class Input:
    """One float input of a case: random values in [low, high) of `shape`, or given `data`.
    `grad` says whether it requires grad (False: a float constant of the compute dtype)."""

    shape: tuple[int, ...]
    low: float = -2.0
    high: float = 2.0
    data: Any = None
    grad: bool = True


def widest_float(dev: pyburn.Device) -> pyburn.DType:
    """float64 where the device has it, else float32: for tests whose values are exact in
    both (small dyadic numbers), so they run on every device."""
    return pyburn.float64 if "float64" in dev.caps else pyburn.float32


def rand(*shape: int, low: float = -2.0, high: float = 2.0, grad: bool = True) -> Input:
    """A random input of `shape` in [low, high)."""
    return Input(tuple(shape), low, high, grad=grad)


def given(data: Any, grad: bool = True) -> Input:
    """An input with these values (nested lists): for ties and boundaries."""
    shape: list[int] = []
    probe = data
    while isinstance(probe, list):
        shape.append(len(probe))
        probe = probe[0]
    return Input(tuple(shape), data=data, grad=grad)


@dataclass(frozen=True)
class Case:
    """One differentiable computation: ``fn(L, *tensors)`` returns a tensor or a sequence of
    tensors. `ref` replaces `fn` for PyTorch where it spells the computation differently;
    `fd` is False where finite differences are meaningless at the inputs (steps, exact ties);
    `hvp` is False where PyTorch's second derivative is not a usable reference (NaN);
    `tol` overrides `GRAD_TOL`; `needs` names device capabilities (dtypes) the case uses."""

    name: str
    fn: Callable[..., Any]
    inputs: tuple[Input, ...]
    ref: Callable[..., Any] | None = None
    fd: bool = True
    hvp: bool = True
    tol: dict[str, Tol] | None = None
    needs: tuple[str, ...] = ()

    def runs_on(self, dev: pyburn.Device) -> bool:
        """Whether `dev` has every capability the case needs."""
        return all(cap in dev.caps for cap in self.needs)

    def require(self, dev: pyburn.Device) -> None:
        """Skip the test where `dev` lacks a capability the case needs."""
        if not self.runs_on(dev):
            pytest.skip(f"{self.name} needs {', '.join(self.needs)}, which {dev} lacks")


def case(name: str, fn: Callable[..., Any], *inputs: Input, **options: Any) -> Case:
    """Shorthand for `Case` with the inputs as positional arguments."""
    return Case(name, fn, tuple(inputs), **options)


# ---- the two libraries ------------------------------------------------------------------------

class PyburnLib:
    """pyburn's names for the cases, on one device with one float dtype."""

    is_reference = False

    def __init__(self, device: pyburn.Device, dtype: pyburn.DType):
        self.device = device
        self.dtype = dtype

    def __getattr__(self, name: str) -> Any:
        return getattr(pyburn, name)

    def ints(self, data: Any) -> pyburn.Tensor:
        """An index tensor."""
        return pyburn.tensor(data, dtype=pyburn.int32, device=self.device)

    def bools(self, data: Any) -> pyburn.Tensor:
        """A bool mask."""
        return pyburn.tensor(data, dtype=pyburn.bool, device=self.device)

    def const(self, data: Any) -> pyburn.Tensor:
        """A float tensor that requires no grad."""
        return pyburn.tensor(data, dtype=self.dtype, device=self.device)

    def leaf(self, data: Any, requires_grad: bool) -> pyburn.Tensor:
        """A leaf input."""
        return pyburn.tensor(data, dtype=self.dtype, device=self.device,
                             requires_grad=requires_grad)

    def pad(self, x: Any, pads: Sequence[int], mode: str = "constant", value: float = 0.0) -> Any:
        """``torch.nn.functional.pad``'s signature."""
        return pyburn.pad(x, pads, mode, value)

    def norm(self, x: Any, p: float | str = 2, dim: Any = None, keepdim: bool = False) -> Any:
        """The vector p-norm."""
        return pyburn.norm(x, p, dim, keepdim)

    def scatter_accumulate(self, x: Any, dim: int, index: Any, src: Any) -> Any:
        """scatter with ``reduce="add"`` (PyTorch: scatter_add)."""
        return pyburn.scatter(x, dim, index, src, reduce="add")

    def index_put(self, x: Any, indices: tuple, values: Any, accumulate: bool = False) -> Any:
        """A copy of x with x[indices] set to (or increased by) values."""
        return x.index_put(indices, values, accumulate)

    # ---- graph access
    @staticmethod
    def is_float(t: Any) -> bool:
        """Whether `t` is a float tensor (only those enter the loss)."""
        return t.dtype.is_floating_point

    @staticmethod
    def requires_grad(t: Any) -> bool:
        """Whether `t` is recorded."""
        return t.requires_grad

    @staticmethod
    def grad(output: Any, inputs: list, create_graph: bool) -> tuple:
        """Gradients of `output` (None where unused), checked to match each input's shape,
        dtype and device. First-order gradients take the everyday path (``backward()`` into
        fresh leaves' ``.grad``); with `create_graph`, ``pyburn.autodiff.grad``."""
        if create_graph:
            found = pyburn.autodiff.grad(output, inputs, create_graph=True, allow_unused=True)
        else:
            assert all(x.grad is None for x in inputs), "inputs must be fresh leaves"
            output.backward()
            found = tuple(x.grad for x in inputs)
        for g, x in zip(found, inputs):
            if g is not None:
                assert (g.shape, g.dtype, g.device) == (x.shape, x.dtype, x.device), (
                    f"gradient {g.shape} {g.dtype} on {g.device} for an input "
                    f"{x.shape} {x.dtype} on {x.device}")
        return found

    @staticmethod
    def values(t: Any) -> list[float]:
        """The elements, row-major."""
        return flatten(t.tolist())


class TorchLib:
    """PyTorch's names for the cases: the reference, in float64 on the CPU."""

    is_reference = True

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.dtype = torch.float64

    def __getattr__(self, name: str) -> Any:
        return getattr(self.torch, name)

    def ints(self, data: Any) -> Any:
        """An index tensor."""
        return self.torch.tensor(data, dtype=self.torch.long)

    def bools(self, data: Any) -> Any:
        """A bool mask."""
        return self.torch.tensor(data, dtype=self.torch.bool)

    def const(self, data: Any) -> Any:
        """A float tensor that requires no grad."""
        return self.torch.tensor(data, dtype=self.dtype)

    def leaf(self, data: Any, requires_grad: bool) -> Any:
        """A leaf input."""
        return self.torch.tensor(data, dtype=self.dtype, requires_grad=requires_grad)

    def pad(self, x: Any, pads: Sequence[int], mode: str = "constant", value: float = 0.0) -> Any:
        """``torch.nn.functional.pad``."""
        fill = value if mode == "constant" else None
        return self.torch.nn.functional.pad(x, list(pads), mode=mode, value=fill)

    def norm(self, x: Any, p: float | str = 2, dim: Any = None, keepdim: bool = False) -> Any:
        """The vector p-norm."""
        order = 2 if p == "fro" else p
        return self.torch.linalg.vector_norm(x, ord=order, dim=dim, keepdim=keepdim)

    def scatter_accumulate(self, x: Any, dim: int, index: Any, src: Any) -> Any:
        """scatter_add."""
        return self.torch.scatter_add(x, dim, index, src)

    def index_put(self, x: Any, indices: tuple, values: Any, accumulate: bool = False) -> Any:
        """A copy of x with x[indices] set to (or increased by) values."""
        return x.index_put(indices, values, accumulate)

    def is_float(self, t: Any) -> bool:
        """Whether `t` is a float tensor."""
        return t.is_floating_point()

    @staticmethod
    def requires_grad(t: Any) -> bool:
        """Whether `t` is recorded."""
        return t.requires_grad

    def grad(self, output: Any, inputs: list, create_graph: bool) -> tuple:
        """Gradients of `output` (None where unused)."""
        return self.torch.autograd.grad(output, inputs, create_graph=create_graph,
                                        allow_unused=True)

    @staticmethod
    def values(t: Any) -> list[float]:
        """The elements, row-major (PyTorch returns storage-less "zero tensors" for some
        second derivatives, such as those of abs)."""
        if t._is_zerotensor():
            return [0.0] * t.numel()
        return t.detach().reshape(-1).tolist()


# ---- running a case ------------------------------------------------------------------------

def random_values(seed: str, shape: tuple[int, ...], low: float, high: float,
                  dtype: str) -> Any:
    """Nested lists of `shape` with values in [low, high) rounded to `dtype`, drawn from a
    generator seeded with `seed`: the same for every library and device."""
    rng = random.Random(seed)
    flat = [round_to(rng.uniform(low, high), dtype) for _ in range(numel(shape))]
    return nest(flat, shape)


def input_values(c: Case, dtype: str) -> list[Any]:
    """The values of each input of case `c`, rounded to `dtype`."""
    out = []
    for k, inp in enumerate(c.inputs):
        if inp.data is not None:
            out.append(nest([round_to(float(v), dtype) for v in flatten(inp.data)], inp.shape))
        else:
            out.append(random_values(f"{c.name}/input{k}", inp.shape, inp.low, inp.high, dtype))
    return out


def as_list(value: Any) -> list:
    """A case's result as a list of tensors."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass
class Result:
    """What one library computed for a case: float outputs, gradients of the weighted loss
    (one per input that requires grad; None where nothing flowed) and Hessian-vector products.
    Every tensor is already a flat list of floats."""

    outputs: list[list[float]]
    grads: list[list[float] | None]
    hvps: list[list[float] | None] | None = None


def weighted_loss(lib: Any, outputs: list, seed: str, dtype: str) -> Any:
    """Sum of ``(out * w).sum()`` over the float outputs, with fixed random weights."""
    total = None
    for k, out in enumerate(outputs):
        w = lib.const(random_values(f"{seed}/weight{k}", tuple(out.shape), -1.0, 1.0, dtype))
        term = (out * w).sum()
        total = term if total is None else total + term
    return total


def evaluate(c: Case, lib: Any, dtype: str, second_order: bool = False) -> Result:
    """Run case `c` with `lib` on inputs rounded to `dtype` (a name)."""
    leaves = [lib.leaf(v, inp.grad) for v, inp in zip(input_values(c, dtype), c.inputs)]
    fn = c.ref if (c.ref is not None and lib.is_reference) else c.fn
    outputs = [o for o in as_list(fn(lib, *leaves)) if lib.is_float(o)]
    wrt = [x for x, inp in zip(leaves, c.inputs) if inp.grad]
    loss = weighted_loss(lib, outputs, c.name, dtype)
    result = Result([lib.values(o) for o in outputs], [None] * len(wrt))
    if loss is None or not lib.requires_grad(loss):
        result.hvps = [None] * len(wrt) if second_order else None
        return result
    grads = lib.grad(loss, wrt, create_graph=second_order)
    result.grads = [None if g is None else lib.values(g) for g in grads]
    if second_order:
        result.hvps = hessian_vector(lib, c.name, wrt, grads, dtype)
    return result


def hessian_vector(lib: Any, seed: str, wrt: list, grads: Sequence[Any],
                   dtype: str) -> list[list[float] | None]:
    """H v for fixed random v, from gradients computed with create_graph: the gradient of
    ``sum(g . v)``. Gradients that do not depend on the inputs contribute nothing."""
    total = None
    for k, (g, x) in enumerate(zip(grads, wrt)):
        if g is None or not lib.requires_grad(g):
            continue
        v = lib.const(random_values(f"{seed}/direction{k}", tuple(x.shape), -1.0, 1.0, dtype))
        term = (g * v).sum()
        total = term if total is None else total + term
    if total is None:
        return [None] * len(wrt)
    return [None if h is None else lib.values(h) for h in lib.grad(total, wrt, False)]


# ---- comparing ----------------------------------------------------------------------------

def close(got: float, want: float, tol: Tol) -> bool:
    """|got - want| <= abs + rel * |want|; NaN matches NaN and infinities match exactly."""
    if want != want:
        return got != got
    if want in (float("inf"), float("-inf")) or got in (float("inf"), float("-inf")):
        return got == want
    return abs(got - want) <= tol.abs + tol.rel * abs(want)


def assert_close(got: list[float] | None, want: list[float] | None, size: int, tol: Tol,
                 what: str) -> None:
    """Compare two flat lists; None (no gradient flowed) counts as zeros of `size`."""
    got = [0.0] * size if got is None else got
    want = [0.0] * size if want is None else want
    assert len(got) == len(want), f"{what}: {len(got)} values, expected {len(want)}"
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, tol)]
    if bad:
        shown = ", ".join(f"[{i}] got {got[i]!r} expected {want[i]!r}" for i in bad[:6])
        raise AssertionError(f"{what}: {len(bad)} of {len(got)} values differ "
                             f"(tolerance {tol}): {shown}")


def assert_results_match(c: Case, got: Result, want: Result, dtype: str) -> None:
    """pyburn's outputs, gradients and (if computed) Hessian-vector products against the
    reference's."""
    tol = (c.tol or GRAD_TOL)[dtype]
    assert len(got.outputs) == len(want.outputs), (
        f"{len(got.outputs)} float outputs, the reference has {len(want.outputs)}")
    for k, (g, w) in enumerate(zip(got.outputs, want.outputs)):
        assert_close(g, w, len(w), tol, f"{c.name}: output {k}")
    sizes = [numel(inp.shape) for inp in c.inputs if inp.grad]
    for k, (g, w) in enumerate(zip(got.grads, want.grads)):
        assert_close(g, w, sizes[k], tol, f"{c.name}: gradient of input {k}")
    if got.hvps is not None and want.hvps is not None:
        for k, (g, w) in enumerate(zip(got.hvps, want.hvps)):
            assert_close(g, w, sizes[k], tol, f"{c.name}: Hessian-vector product, input {k}")


# ---- finite differences --------------------------------------------------------------------

def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], device: pyburn.Device,
              eps: float = FD_EPS, tol: Tol = FD_TOL, seed: str = "gradcheck") -> None:
    """Check pyburn's gradients of `fn` against central finite differences, in float64.

    `fn` takes one tensor per entry of `inputs` (nested lists of floats) and returns a tensor
    or a sequence of tensors; the checked scalar is their weighted sum with fixed random
    weights. Every input requires grad.
    """
    def loss_of(values: Sequence[Any], requires_grad: bool) -> tuple[Any, list]:
        leaves = [pyburn.tensor(v, dtype=pyburn.float64, device=device,
                                requires_grad=requires_grad) for v in values]
        outputs = [o for o in as_list(fn(*leaves)) if o.dtype.is_floating_point]
        return weighted_loss(PyburnLib(device, pyburn.float64), outputs, seed, "float64"), leaves

    loss, leaves = loss_of(inputs, True)
    loss.backward()
    shapes = [x.shape for x in leaves]
    flats = [flatten(v) for v in inputs]
    for k, (x, flat) in enumerate(zip(leaves, flats)):
        analytic = [0.0] * len(flat) if x.grad is None else flatten(x.grad.tolist())
        numeric = []
        for i in range(len(flat)):
            sides = []
            for sign in (1, -1):
                moved = [list(f) for f in flats]
                moved[k][i] += sign * eps
                with pyburn.no_grad():
                    value, _ = loss_of([nest(m, s) for m, s in zip(moved, shapes)], False)
                sides.append(value.item())
            numeric.append((sides[0] - sides[1]) / (2 * eps))
        assert_close(analytic, numeric, len(flat), tol, f"finite differences, input {k}")
