"""Sizes that follow the dynamic axes: `Dim`, and how one is found from several traces.

pyburn's shapes are plain ints, so one forward pass cannot say which sizes come from the
batch (or any other dynamic axis) and which are fixed. The exporter therefore traces the
forward pass several times, with the dynamic axes of the inputs at their example sizes or one
longer in every combination (and once more with every axis two longer, as a check), and fits
every size it saw, in a shape or in an operation's arguments, as a polynomial of the dynamic
sizes. A size that does not change is static; ``x.reshape(-1, x.shape[-1])`` of a
(batch, seq, 16) tensor gives ``batch * seq``; a slice up to ``n - 1`` gives ``seq - 1``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ...errors import ArgumentError


@dataclass(frozen=True)
class Dim:
    """``const + sum(coef * product of symbols)``: a size as a polynomial in the sizes of the
    dynamic axes (numbered in the order of `SizePlan.names`), each symbol at most once per
    product: ``batch * seq * 16 - 1``."""

    const: int
    #: (symbols of one product, sorted; its coefficient), sorted, nonzero coefficients
    terms: tuple[tuple[tuple[int, ...], int], ...] = ()

    @staticmethod
    def of(coefs: dict[tuple[int, ...], int]) -> Dim:
        """The Dim with these coefficients (the empty product is the constant)."""
        return Dim(coefs.get((), 0), tuple(sorted((m, c) for m, c in coefs.items() if m and c)))

    @property
    def is_static(self) -> bool:
        """True when the size is the same whatever the dynamic sizes."""
        return not self.terms

    def __add__(self, other: Dim | int) -> Dim:
        other = other if isinstance(other, Dim) else Dim(other)
        coefs = dict(self.terms)
        coefs[()] = self.const + other.const
        for mono, coef in other.terms:
            coefs[mono] = coefs.get(mono, 0) + coef
        return Dim.of(coefs)

    def __sub__(self, other: Dim | int) -> Dim:
        return self + (other if isinstance(other, Dim) else Dim(other)) * -1

    def __mul__(self, factor: int) -> Dim:
        return Dim.of({(): self.const * factor, **{m: c * factor for m, c in self.terms}})

    def at(self, sizes: tuple[int, ...]) -> int:
        """The size when the dynamic axes have `sizes`."""
        return self.const + sum(c * math.prod(sizes[s] for s in m) for m, c in self.terms)


@dataclass(frozen=True)
class SizePlan:
    """The sizes of the dynamic axes in each trace: one trace per corner of the box whose
    sides are each axis at its example size or one more (the first trace has the example's
    sizes), then a check with every size two larger. Without dynamic axes there are two
    traces of equal sizes (the second one, with other input values, catches values the
    tracer cannot see)."""

    names: tuple[str, ...]
    base: tuple[int, ...]

    @cached_property
    def traces(self) -> list[tuple[int, ...]]:
        """The symbol sizes of each trace, in order."""
        n = len(self.base)
        corners = [tuple(s + (mask >> k & 1) for k, s in enumerate(self.base))
                   for mask in range(1 << n)]
        return corners + [tuple(s + 2 for s in self.base)]

    def fit(self, values: list[int], what: str) -> Dim:
        """The Dim that gives `values` (one per trace); ArgumentError naming `what` when no
        polynomial of the dynamic sizes, of degree at most one in each, does."""
        n = len(self.base)
        # the coefficients in the offsets from the example's sizes (Moebius inversion over
        # the corners), then expanded: prod(x_k - s_k) over a set of axes
        offsets = list(values[:1 << n])
        for k in range(n):
            for mask in range(1 << n):
                if mask >> k & 1:
                    offsets[mask] -= offsets[mask ^ (1 << k)]
        coefs: dict[tuple[int, ...], int] = {}
        for mask, a in enumerate(offsets):
            if not a:
                continue
            axes = [k for k in range(n) if mask >> k & 1]
            for sub in range(1 << len(axes)):
                kept = tuple(k for i, k in enumerate(axes) if sub >> i & 1)
                factor = math.prod(-self.base[k] for i, k in enumerate(axes)
                                   if not sub >> i & 1)
                coefs[kept] = coefs.get(kept, 0) + a * factor
        dim = Dim.of(coefs)
        if dim.at(self.traces[-1]) != values[-1]:
            if not self.base:
                raise ArgumentError(f"the size of {what} changed with the values of the inputs "
                                    f"({values[0]} then {values[-1]}): a shape that depends on "
                                    f"data cannot be exported")
            raise ArgumentError(f"the size of {what} is not a polynomial of degree one in each "
                                f"dynamic axis {list(self.names)} (it was {values} in the "
                                f"traces): it cannot be exported with these axes dynamic")
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
