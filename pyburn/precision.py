"""Autocast (mixed precision): the per-thread mode and the one policy table that says which
ops run in float16 and which in float32 inside ``pyburn.autocast(device)``.

Inside the region, every op named in `POLICY` casts its floating-point inputs before it
runs: a ``"lower"`` op (matmul, linear, convolutions) casts float32 inputs to the autocast
dtype and gives a float16 result; a ``"float32"`` op (softmax, normalisations, losses,
sums, exp, log, ...) casts float16 inputs up to float32, because it needs the range or the
bits. Every other op "promotes": it runs in its inputs' dtypes after pyburn's one
promotion table (float16 with float32 gives float32). float64 inputs are never touched.
Each op's entry point calls `autocast_inputs` once with its name; the casts are recorded
ops, so gradients reach each parameter in its own dtype (float32 master weights).

The mode is thread-local and per device kind ("cpu", "wgpu", ...); the backward pass runs
with it off (`swap_autocast`), so every gradient has its forward value's dtype. On a device
without float16 (wasm) autocast does nothing, with a warning the first time.

>>> import pyburn
>>> a = pyburn.ones(2, 3, device="flex")
>>> with pyburn.autocast("flex"):
...     (a @ a.T).dtype, (a @ a.T).sum().dtype
(pyburn.float16, pyburn.float32)
>>> (a @ a.T).dtype
pyburn.float32
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from ._tensor import Tensor
from .devices import Device
from .devices import device as as_device
from .dtypes import DType, as_dtype, float16, float32
from .errors import DTypeError

F = TypeVar("F", bound=Callable[..., Any])

LOWER = "lower"
FLOAT32 = "float32"

_MATRIX_PRODUCTS = ("matmul", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                    "conv_transpose2d", "conv_transpose3d")
_RANGE_HUNGRY = (
    # elementwise (pyburn.ops.elementwise's names)
    "exp", "exp2", "expm1", "log", "log2", "log1p", "reciprocal", "rsqrt", "sinh",
    "cosh", "tan", "asin", "acos",
    # reductions and scans
    "sum", "prod", "cumsum", "cumprod",
    # softmax and the normalisations
    "softmax", "log_softmax", "softmin", "layer_norm", "batch_norm", "instance_norm",
    "group_norm", "rms_norm",
    # losses
    "nll_loss", "cross_entropy", "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss")

#: op name -> "lower" (float32 inputs cast to the autocast dtype) or "float32" (float16
#: inputs cast to float32); an op not listed promotes (runs in its inputs' dtypes)
POLICY: dict[str, str] = {**dict.fromkeys(_MATRIX_PRODUCTS, LOWER),
                          **dict.fromkeys(_RANGE_HUNGRY, FLOAT32)}


class _AutocastState(threading.local):
    """Each thread's autocast dtypes by device kind (empty: autocast is off in the thread).
    A region replaces the dict, never changes it, so restoring the previous one is one
    assignment."""

    dtypes: dict[str, DType] = {}


_state = _AutocastState()
_warned: set[tuple[str, str]] = set()
# how many threads have autocast on for some device kind: while none has, the ops' one
# test is this global's (a thread-local read costs several times more, on every op)
_threads_on = 0
_threads_lock = threading.Lock()


def autocast_inputs(op: str, *tensors: Any) -> tuple[Any, ...]:
    """`tensors` cast as `POLICY` says for `op` where autocast is on for their device
    (anything but a float tensor, such as None or a Python number, passes through): each
    op's entry point calls this once.

    >>> import pyburn
    >>> x = pyburn.ones(2, device="flex")
    >>> with pyburn.autocast("flex"):
    ...     [t.dtype for t in autocast_inputs("matmul", x, x.half())]
    [pyburn.float16, pyburn.float16]
    """
    if not _threads_on:
        return tensors
    active = _state.dtypes
    rule = POLICY.get(op)
    if rule is None or not active:
        return tensors
    return tuple([_cast(t, rule, active) for t in tensors])


def _cast(t: Any, rule: str, active: dict[str, DType]) -> Any:
    if not isinstance(t, Tensor) or not t.dtype.is_floating_point:
        return t
    low = active.get(t.device.kind)
    if low is None or low not in t.device.backend.dtypes:
        return t
    if rule == LOWER:
        return t.cast(low) if t.dtype is float32 else t
    return t.cast(float32) if t.dtype is low else t


def autocast_state() -> dict[str, DType]:
    """This thread's autocast dtypes by device kind (never changed in place: a region
    replaces the dict), for `swap_autocast` to restore later (gradient checkpointing
    recomputes its forward pass under the autocast it first ran under)."""
    return _state.dtypes


def swap_autocast(dtypes: dict[str, DType]) -> dict[str, DType]:
    """Set this thread's autocast dtypes by device kind and return the ones they replace
    (the backward walk turns autocast off so, and restores it)."""
    global _threads_on
    previous, _state.dtypes = _state.dtypes, dtypes
    if bool(previous) != bool(dtypes):
        with _threads_lock:
            _threads_on += 1 if dtypes else -1
    return previous


def is_autocast_enabled(device: str | Device | None = None) -> bool:
    """Whether ops on `device` (default: the default device) are autocast in this thread:
    a region is open for its kind and the device has the autocast dtype."""
    dev = as_device(device)
    low = _state.dtypes.get(dev.kind)
    return low is not None and low in dev.backend.dtypes


def get_autocast_dtype(device: str | Device | None = None) -> DType | None:
    """The dtype "lower" ops produce on `device` in this thread, or None outside autocast."""
    return _state.dtypes.get(as_device(device).kind) if is_autocast_enabled(device) else None


class autocast:  # noqa: N801 - PyTorch's name, used like a function
    """Run matmul, linear and convolutions on `device`'s kind in float16 inside the region,
    and the ops that need range in float32 (`POLICY`); also a decorator. Regions nest; an
    inner ``autocast(device, enabled=False)`` turns it off for that kind until it ends.

    Only float16 exists as the lower dtype (pyburn has no bfloat16). On a device without
    float16 (wasm, or a GPU adapter without ``shader-f16``) the region does nothing, with a
    warning the first time. Use `pyburn.amp.GradScaler` to train under it.

    >>> import pyburn
    >>> x = pyburn.ones(4, 4, device="cpu")
    >>> @pyburn.autocast("cpu")
    ... def forward(x):
    ...     return x @ x
    >>> forward(x).dtype
    pyburn.float16
    """

    def __init__(self, device: str | Device | None = None, dtype: Any = float16,
                 enabled: bool = True):
        self.device = as_device(device)
        self.dtype = as_dtype(dtype)
        if self.dtype is not float16:
            raise DTypeError(f"autocast lowers to float16, got {self.dtype.name} (pyburn has "
                             "no bfloat16)")
        self.enabled = bool(enabled)
        self._previous: list[dict[str, DType]] = []

    def __enter__(self) -> autocast:
        kind = self.device.kind
        dtypes = dict(_state.dtypes)
        if self.enabled:
            dtypes[kind] = self.dtype
            self._warn_if_missing()
        else:
            dtypes.pop(kind, None)
        self._previous.append(swap_autocast(dtypes))
        return self

    def __exit__(self, *exc: object) -> None:
        swap_autocast(self._previous.pop())

    def __call__(self, fn: F) -> F:
        """`fn` run inside a fresh region like this one on every call (so that calls from
        several threads, or recursive ones, each restore their own state)."""
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.dtype, self.enabled):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    def _warn_if_missing(self) -> None:
        name = self.device.plain().name
        if self.dtype not in self.device.backend.dtypes and (name, self.dtype.name) not in _warned:
            _warned.add((name, self.dtype.name))
            warnings.warn(f"autocast does nothing on {name!r}: the device has no "
                          f"{self.dtype.name}; its ops run in their own dtypes", stacklevel=3)
