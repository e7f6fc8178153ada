"""The numpy function behind each elementwise primitive, looked up once from the op table.

``pyburn.ops.elementwise`` names a numpy function per op; a name ending in "_" is one numpy
lacks, supplied by `extra_math` under the name without the underscore. Two columns of the
table need more than a lookup on integer inputs, as its ``py_int`` functions say:
rounding ops are the identity (numpy's ``rint`` would round-trip int64 through float64),
and ``pow`` accepts negative exponents. Integer floor_divide, remainder and fmod by zero
already give 0 in numpy (the warning it would raise is silenced by the backend).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ops.elementwise import BINARY, UNARY
from . import extra_math


def _lookup(name: str) -> Callable:
    if name.endswith("_"):
        return getattr(extra_math, name[:-1])
    return getattr(np, name)


def _identity_on_integers(fn: Callable) -> Callable:
    def rounding(x: np.ndarray) -> np.ndarray:
        return fn(x) if x.dtype.kind == "f" else x

    return rounding


UNARY_FUNCTIONS: dict[str, Callable] = {
    name: _identity_on_integers(_lookup(op.numpy)) if op.domain == "rounding"
    else _lookup(op.numpy)
    for name, op in UNARY.items()
}

BINARY_FUNCTIONS: dict[str, Callable] = {
    name: _lookup(op.numpy) for name, op in BINARY.items()} | {"pow": extra_math.power}
