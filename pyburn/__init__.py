"""pyburn: a deep-learning framework in Python, modelled on Burn.

One codebase on a pure-Python backend (``flex``, runs under Pyodide), a numpy backend
(``cpu``) and, later, WebGPU. Tensors follow PyTorch's names and semantics:

>>> import pyburn
>>> x = pyburn.tensor([[1.0, 2.0], [3.0, 4.0]], device="flex")
>>> (x @ x).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING

from . import amp  # noqa: F401  (pyburn.amp.GradScaler)
from . import standard as _standard  # noqa: F401  (installs Tensor methods)
from ._tensor import Tensor
from .autodiff import enable_grad, is_grad_enabled, no_grad
from .devices import Device, available_devices, default_device, device, set_default_device
from .dlpack import from_dlpack
from .dtypes import (
    DType,
    bool_,
    default_float,
    default_int,
    float16,
    float32,
    float64,
    int32,
    int64,
    uint8,
)
from .errors import (
    ArgumentError,
    CollectiveTimeout,
    DeviceError,
    DimError,
    DTypeError,
    FormatError,
    IndexOutOfRange,
    MissingExtraError,
    PyburnError,
    ReadbackError,
    RemoteError,
    ResultMismatch,
    ShapeError,
    WebBuildError,
    WorkerError,
    WorkerFailed,
)
from .ops import indexing as _indexing  # noqa: F401  (installs Tensor methods)
from .ops import linalg as _linalg  # noqa: F401
from .ops import math_ops as _math_ops
from .ops import movement as _movement
from .ops import reduction as _reduction
from .ops.creation import (
    arange,
    empty,
    empty_like,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from .ops.indexing import (
    gather,
    index_put,
    index_select,
    masked_fill,
    masked_select,
    nonzero,
    one_hot,
    scatter,
    scatter_add,
    take,
)
from .ops.linalg import dot, einsum, eye, matmul, outer, tril, triu
from .ops.logistic import sigmoid
from .ops.movement import (
    broadcast_to,
    cat,
    chunk,
    flatten,
    flip,
    movedim,
    narrow,
    pad,
    permute,
    repeat,
    reshape,
    roll,
    split,
    squeeze,
    stack,
    swapdims,
    tile,
    transpose,
    unflatten,
    unsqueeze,
)
from .ops.random_tensors import bernoulli, rand, rand_like, randint, randn, randn_like
from .ops.reduction import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    std,
    sum,
    var,
)
from .ops.sorting import argsort, sort, topk
from .precision import autocast, get_autocast_dtype, is_autocast_enabled
from .random import Generator, manual_seed

bool = bool_  # noqa: A001 - PyTorch's spelling, pyburn.bool
concat = cat
swapaxes = swapdims
globals().update(_math_ops.PRIMITIVES)
globals().update({name: fn for name, fn in _math_ops.COMPOSITES.items() if name != "where"})
where = _math_ops.where
del _reduction, _movement

#: the subpackages imported on first use (PEP 562): ``import pyburn`` loads the tensor layer
#: only, which is most of a browser's cold start; ``pyburn.nn`` or ``from pyburn import nn``
#: loads nn then
LAZY_SUBPACKAGES = ("array_api", "data", "kernel", "nn", "optim", "quant", "store", "train")
if TYPE_CHECKING:  # what static tools see: the subpackages __getattr__ gives
    from . import array_api, data, kernel, nn, optim, quant, store, train  # noqa: F401


def __getattr__(name: str) -> object:
    """Import a subpackage of `LAZY_SUBPACKAGES` the first time it is named."""
    if name in LAZY_SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The loaded names and the subpackages not loaded yet."""
    return sorted(set(globals()) | set(LAZY_SUBPACKAGES))
