"""Reductions on a million float32 elements: sum of all, max along a dim, mean of all.

The max along a dim is ``amax(dim=1)``: ``max(dim=1)`` also computes the indices (as in
PyTorch), which numpy's ``max(axis=1)`` does not, so amax is the like-for-like op.
"""

from __future__ import annotations

from .sweep import OpCase, benchmarks

CASES = (
    OpCase("sum()", lambda a, b: a.sum(), lambda np, a, b: a.sum(),
           lambda a, b: sum(map(sum, a))),
    OpCase("amax(dim=1)", lambda a, b: a.amax(dim=1), lambda np, a, b: a.max(axis=1),
           lambda a, b: [max(r) for r in a]),
    OpCase("mean()", lambda a, b: a.mean(), lambda np, a, b: a.mean(),
           lambda a, b: sum(map(sum, a)) / (len(a) * len(a[0]))),
)

BENCHMARKS = benchmarks("reduction", CASES, "sum, amax(dim=1), mean on 1M float32")
