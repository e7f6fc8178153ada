"""Elementwise ops on a million float32 elements: add, mul, exp and a scalar multiply.

The scalar case (``a * 2``) is there because pyburn turns the Python number into a
one-element tensor broadcast to the input's shape, which a backend must handle as fast
as a same-shape operand.
"""

from __future__ import annotations

import math

from .sweep import OpCase, benchmarks

CASES = (
    OpCase("add a + b", lambda a, b: a + b, lambda np, a, b: a + b,
           lambda a, b: [[x + y for x, y in zip(r, s)] for r, s in zip(a, b)]),
    OpCase("mul a * b", lambda a, b: a * b, lambda np, a, b: a * b,
           lambda a, b: [[x * y for x, y in zip(r, s)] for r, s in zip(a, b)]),
    OpCase("exp(a)", lambda a, b: a.exp(), lambda np, a, b: np.exp(a),
           lambda a, b: [[math.exp(x) for x in r] for r in a]),
    OpCase("a * 2 (scalar)", lambda a, b: a * 2, lambda np, a, b: a * 2,
           lambda a, b: [[x * 2 for x in r] for r in a]),
)

BENCHMARKS = benchmarks("elementwise", CASES, "add, mul, exp, x*2 on 1M float32")
