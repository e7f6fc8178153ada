"""`pyburn.array_api`: pyburn as a namespace of the Python array API standard (2024.12), so
that code written against the standard (scikit-learn with ``array_api_dispatch``, SciPy,
array-api-compat users) runs on pyburn tensors, on every device.

Each function is a thin layer over pyburn's own ops: most map 1:1 and come from tables
(`elementwise.FUNCTIONS`, `statistical.REDUCTIONS`); the rest give pyburn's ops the
standard's signatures, or compose a few of them (`unique_*`, `searchsorted`, `hypot`).
``pyburn.Tensor`` is the array type (``t.__array_namespace__()`` is this module); dtypes are
pyburn's; devices are pyburn's (`pyburn.device`), and ``device=`` takes either form.
docs/array_api.md lists where pyburn differs from the standard, and why.

>>> import pyburn
>>> xp = pyburn.tensor([1.0], device="flex").__array_namespace__()
>>> x = xp.asarray([[2.0, 0.0], [0.0, 4.0]], device="flex")
>>> xp.sum(xp.matmul(x, xp.linalg.inv(x)), axis=1).tolist()
[1.0, 1.0]
"""

from __future__ import annotations

import math

from ..dtypes import bool_, float16, float32, float64, int32, int64, uint8
from . import fft, linalg
from .creation import (
    arange,
    asarray,
    empty,
    empty_like,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from .dtypes import astype, can_cast, finfo, iinfo, isdtype, result_type
from .elementwise import COMPOSED, FUNCTIONS
from .info import __array_namespace_info__
from .linalg import matmul, matrix_transpose, tensordot, vecdot
from .manipulation import (
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    take,
    take_along_axis,
    tile,
    unstack,
)
from .searching import argmax, argmin, argsort, nonzero, searchsorted, sort, where
from .sets import unique_all, unique_counts, unique_inverse, unique_values
from .statistical import REDUCTIONS, SCANS, count_nonzero, diff

#: the revision of the standard this namespace follows
__array_api_version__ = "2024.12"

bool = bool_  # noqa: A001 - the standard's name
e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None

globals().update(FUNCTIONS)
globals().update(COMPOSED)
globals().update(REDUCTIONS)
globals().update(SCANS)

__all__ = sorted([
    "__array_api_version__", "__array_namespace_info__", "arange", "argmax", "argmin",
    "argsort", "asarray", "astype", "bool", "broadcast_arrays", "broadcast_to", "can_cast",
    "concat", "count_nonzero", "diff", "e", "empty", "empty_like", "expand_dims", "eye", "fft",
    "finfo", "flip", "float16", "float32", "float64", "from_dlpack", "full", "full_like",
    "iinfo", "inf", "int32", "int64", "isdtype", "linalg", "linspace", "matmul",
    "matrix_transpose", "meshgrid", "moveaxis", "nan", "newaxis", "nonzero", "ones",
    "ones_like", "permute_dims", "pi", "repeat", "reshape", "result_type", "roll",
    "searchsorted", "sort", "squeeze", "stack", "take", "take_along_axis", "tensordot", "tile",
    "tril", "triu", "uint8", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "unstack", "vecdot", "where", "zeros", "zeros_like",
    *FUNCTIONS, *COMPOSED, *REDUCTIONS, *SCANS])
