"""Sizes that follow the dynamic axes: `Dim`, and how one is found from several traces.

pyburn's shapes are plain ints, so one forward pass cannot say which sizes come from the
batch (or any other dynamic axis) and which are fixed. The exporter therefore traces the
forward pass several times, each time with one dynamic axis of the inputs one longer (and one
last time with every axis two longer, as a check), and fits every size it saw, in a shape or
in an operation's arguments, as an affine function of the dynamic sizes. A size that does
not change is static; ``x.reshape(x.shape[0] * 4, -1)`` gives ``4 * batch``; a slice up to
``n - 1`` gives ``seq - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ...errors import ArgumentError


@dataclass(frozen=True)
class Dim:
    """``const + sum(coef * symbol)``: a size as an affine function of the dynamic axes,
    whose symbols are numbered in the order `SizePlan.names` gives them."""

    const: int
    terms: tuple[tuple[int, int], ...] = ()  # (symbol, coefficient), sorted, nonzero

    @property
    def is_static(self) -> bool:
        """True when the size is the same whatever the dynamic sizes."""
        return not self.terms

    def __add__(self, other: Dim | int) -> Dim:
        other = other if isinstance(other, Dim) else Dim(other)
        coefs = dict(self.terms)
        for sym, coef in other.terms:
            coefs[sym] = coefs.get(sym, 0) + coef
        return Dim(self.const + other.const, tuple(sorted((s, c) for s, c in coefs.items() if c)))

    def __sub__(self, other: Dim | int) -> Dim:
        return self + (other if isinstance(other, Dim) else Dim(other)) * -1

    def __mul__(self, factor: int) -> Dim:
        if factor == 0:
            return Dim(0)
        return Dim(self.const * factor, tuple((s, c * factor) for s, c in self.terms))

    def at(self, sizes: tuple[int, ...]) -> int:
        """The size when the dynamic axes have `sizes`."""
        return self.const + sum(c * sizes[s] for s, c in self.terms)


@dataclass(frozen=True)
class SizePlan:
    """The sizes of the dynamic axes in each trace: trace 0 has the example's sizes, trace k
    (1 <= k <= n) has symbol k-1 one larger, the last trace has every size two larger.
    Without dynamic axes there are two traces of equal sizes (the second one, with other
    input values, catches values the tracer cannot see)."""

    names: tuple[str, ...]
    base: tuple[int, ...]

    @cached_property
    def traces(self) -> list[tuple[int, ...]]:
        """The symbol sizes of each trace, in order."""
        plans = [self.base]
        for k in range(len(self.base)):
            plans.append(tuple(s + (k == i) for i, s in enumerate(self.base)))
        plans.append(tuple(s + 2 for s in self.base) if self.base else self.base)
        return plans

    def fit(self, values: list[int], what: str) -> Dim:
        """The Dim that gives `values` (one per trace); ArgumentError naming `what` when no
        affine function of the dynamic sizes does."""
        base = values[0]
        terms = tuple((k, values[k + 1] - base) for k in range(len(self.base))
                      if values[k + 1] != base)
        dim = Dim(base - sum(c * self.base[k] for k, c in terms), terms)
        if dim.at(self.traces[-1]) != values[-1]:
            if not self.base:
                raise ArgumentError(f"the size of {what} changed with the values of the inputs "
                                    f"({base} then {values[-1]}): a shape that depends on data "
                                    f"cannot be exported")
            raise ArgumentError(f"the size of {what} is not an affine function of the dynamic "
                                f"axes {list(self.names)} (it was {values}): it cannot be "
                                f"exported with these axes dynamic")
        return dim

    def fit_tree(self, trees: list[Any], what: str) -> Any:
        """`trees` (the same nested tuples/lists/dicts of one event's arguments in every
        trace) with every int replaced by its fitted `Dim`; anything else must be equal."""
        first = trees[0]
        if isinstance(first, bool) or not isinstance(first, (int, tuple, list, dict)):
            if any(t != first for t in trees[1:]):
                raise ArgumentError(f"{what} changed between traces ({first!r} then "
                                    f"{trees[-1]!r}): it cannot be exported with the dynamic axes "
                                    f"{list(self.names)}" if self.base else
                                    f"{what} changed with the values of the inputs")
            return first
        if isinstance(first, int):
            return self.fit(list(trees), what)
        if isinstance(first, dict):
            return {k: self.fit_tree([t[k] for t in trees], what) for k in first}
        if any(len(t) != len(first) for t in trees):
            raise ArgumentError(f"{what} changed length between traces")
        fitted = [self.fit_tree([t[i] for t in trees], what) for i in range(len(first))]
        return type(first)(fitted)


def static(dims: Any) -> Any:
    """`dims` (a Dim or a nested structure of them) as plain ints, or None if any is
    dynamic."""
    if isinstance(dims, Dim):
        return dims.const if dims.is_static else None
    if isinstance(dims, (tuple, list)):
        out = [static(d) for d in dims]
        return None if any(o is None for o in out) else type(dims)(out)
    return dims
