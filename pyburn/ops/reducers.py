"""The one table of reductions.

Each entry says, once, what a reduction primitive computes: the binary elementwise op that
folds two values into one (`combine`, a name in ``elementwise.BINARY``, whose scalar, numpy
and WGSL columns the backends use for the fold: a sum is the fold of ``add``), the value of
an empty group, whether it reads its input as truth values, its backward rule, its ONNX
operator, and the same for its running version (the scan: ``cumsum`` is the running
``sum``). A new reduction is one entry; `reduction.py` gives it its public function.

The arg reductions (argmax, argmin) are a primitive of their own (``Backend.arg_reduce``):
their fold carries an index beside the value, and they have no gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._tensor import Tensor


@dataclass(frozen=True)
class Reduction:
    """What one reduction primitive computes, in every column."""

    name: str
    # the BINARY elementwise op that folds two values (on truth values, 0 and 1, where
    # `truth`); associative and commutative, so a backend may fold in any order
    combine: str
    # the fold's starting value: what an empty group gives, where `empty_ok`, and the
    # identity a backend's tree of partial folds starts from (an infinity is the dtype's
    # lowest or highest value on integers)
    identity: float | int | bool
    doc: str
    # whether an empty group has a result (the identity); max of nothing is an error
    empty_ok: bool = True
    # the input is read as truth values (nonzero: 1) and the result is bool (any, all)
    truth: bool = False
    # float16 accumulates in float32 (sums and products lose most of float16's bits)
    widens: bool = False
    # backward rule: (grad, x, axes, result) -> the grad of x; `grad` has x's rank (the
    # reduced dims kept as size 1); `result` is the reduction's value where `saves_result`,
    # else None. None for reductions with no gradient
    grad: Callable[[Tensor, Tensor, tuple[int, ...], Tensor | None], Tensor] | None = None
    saves_result: bool = False
    # the ONNX operator, on the truth values as int32 where `truth`, and the opset from which
    # its axes are an input rather than an attribute
    onnx: str = ""
    onnx_axes_input: int = 18
    # the running version (cumsum for sum): its backward rule, (grad, x, axis) -> the grad
    # of x, and its ONNX operator; None where the reduction has no running version
    scan_grad: Callable[[Tensor, Tensor, int], Tensor] | None = None
    scan_onnx: str | None = None

    @property
    def rule(self) -> str:
        """The key of this reduction's backward rule in ``pyburn.autodiff.rules.RULES``."""
        return f"reduce:{self.name}"

    @property
    def scan_rule(self) -> str:
        """The key of the backward rule of its running version."""
        return f"scan:{self.name}"

    @property
    def scans(self) -> bool:
        """Whether it has a running version (``cumsum``, ``cumprod``)."""
        return self.scan_grad is not None


def _sum_grad(g: Tensor, x: Tensor, axes: tuple[int, ...], result: Tensor | None) -> Tensor:
    return g.broadcast_to(x.shape)


def _prod_grad(g: Tensor, x: Tensor, axes: tuple[int, ...], result: Tensor | None) -> Tensor:
    return g * x.prod(dim=axes, keepdim=True) / x


def _extreme_grad(g: Tensor, x: Tensor, axes: tuple[int, ...], result: Tensor | None) -> Tensor:
    """Ties share the gradient equally, as in PyTorch's amax/amin."""
    hit = (x == result).cast(g.dtype)
    return g * hit / hit.sum(dim=axes, keepdim=True)


def _cumsum_grad(g: Tensor, x: Tensor, axis: int) -> Tensor:
    return g.flip(axis).cumsum(axis).flip(axis)


def _cumprod_grad(g: Tensor, x: Tensor, axis: int) -> Tensor:
    return (g * x.cumprod(axis)).flip(axis).cumsum(axis).flip(axis) / x


_R = Reduction  # short, for the table below
REDUCTIONS: dict[str, Reduction] = {r.name: r for r in (
    _R("sum", "add", 0, "Sum of the elements.", widens=True, grad=_sum_grad,
       onnx="ReduceSum", onnx_axes_input=13, scan_grad=_cumsum_grad, scan_onnx="CumSum"),
    _R("prod", "mul", 1, "Product of the elements.", widens=True, grad=_prod_grad,
       onnx="ReduceProd", scan_grad=_cumprod_grad),
    _R("max", "maximum", -math.inf, "Largest element (NaN wins).", empty_ok=False,
       grad=_extreme_grad, saves_result=True, onnx="ReduceMax"),
    _R("min", "minimum", math.inf, "Smallest element (NaN wins).", empty_ok=False,
       grad=_extreme_grad, saves_result=True, onnx="ReduceMin"),
    _R("any", "maximum", False, "Whether some element is nonzero.", truth=True,
       onnx="ReduceMax"),
    _R("all", "minimum", True, "Whether every element is nonzero.", truth=True,
       onnx="ReduceMin"),
)}
