"""`pyburn.Tensor`: a handle on a backend, plus the shape, dtype and device it stands for.

The tensor layer validates arguments, infers result shapes and dtypes, broadcasts and
promotes, then makes one backend call per primitive. Ops live in the modules named at the
bottom of this file (math_ops, reduction, movement, indexing, linalg) and are installed as
methods there, so every op is written once and reachable both as ``pyburn.f(t)`` and
``t.f()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import buffer
from .devices import Device
from .devices import device as as_device
from .dtypes import DType, as_dtype, bool_, float16, float32, float64, int32, int64
from .errors import ArgumentError, DeviceError, DTypeError, ShapeError
from .formatting import format_tensor
from .numpy_support import require_numpy
from .shape import Shape, norm_dim, numel
from .tape import (
    AccumulateGrad,
    Hook,
    RemovableHandle,
    add_post_accumulate_hook,
    is_grad_enabled,
    leaf_node,
    link,
    record,
)


class Tensor:
    """An n-dimensional array on a device, with PyTorch-style operations.

    >>> import pyburn
    >>> x = pyburn.tensor([[1.0, 2.0], [3.0, 4.0]], device="flex")
    >>> (x * 2 + 1).sum(dim=1).tolist()
    [8.0, 16.0]
    """

    __slots__ = ("_h", "shape", "dtype", "device", "requires_grad", "grad", "_node",
                 "__weakref__")
    _h: Any
    shape: Shape
    dtype: DType
    device: Device
    #: whether gradients flow to this tensor (only on autodiff devices)
    requires_grad: bool
    #: the accumulated gradient of a leaf after ``backward()``
    grad: Tensor | None
    _node: Any

    def __init__(self, *args: Any, **kwargs: Any):
        raise TypeError("create tensors with pyburn.tensor(...), pyburn.zeros(...) and friends")

    # ---- description ---------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of dimensions (rank)."""
        return len(self.shape)

    def dim(self) -> int:
        """Number of dimensions (rank), as in PyTorch."""
        return len(self.shape)

    def numel(self) -> int:
        """Number of elements."""
        return numel(self.shape)

    def size(self, dim: int | None = None) -> Shape | int:
        """The shape, or the size of dimension `dim`."""
        return self.shape if dim is None else self.shape[norm_dim(dim, self.ndim)]

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        """True for float16/32/64 tensors."""
        return self.dtype.is_floating_point

    @property
    def T(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The tensor with its dimensions reversed."""
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:  # noqa: N802 - PyTorch's name
        """The last two dimensions swapped (batched matrix transpose)."""
        return self.transpose(-2, -1)

    # ---- conversion -----------------------------------------------------------------------
    def to(self, *args: Any, dtype: Any = None, device: Any = None) -> Tensor:
        """Move to a device and/or cast to a dtype: ``t.to("cpu")``, ``t.to(pyburn.float64)``,
        ``t.to("flex", pyburn.int32)``."""
        for arg in args:
            if isinstance(arg, (Device, str)) and not _is_dtype_name(arg):
                device = arg
            else:
                dtype = arg
        out = self
        if device is not None:
            out = _move(out, as_device(device))
        if dtype is not None:
            out = out.cast(dtype)
        return out

    def cast(self, dtype: Any) -> Tensor:
        """This tensor converted to `dtype` (floats to ints truncate toward zero)."""
        if dtype is self.dtype:  # the layer's own calls, before reading the argument
            return self
        dtype = as_dtype(dtype)
        if dtype is self.dtype:
            return self
        check_dtype_on(dtype, self.device)
        return result(self.device.backend.cast(self._h, dtype), self.shape, dtype, "cast", (self,))

    def float(self) -> Tensor:
        """Cast to float32."""
        return self.cast(float32)

    def double(self) -> Tensor:
        """Cast to float64."""
        return self.cast(float64)

    def half(self) -> Tensor:
        """Cast to float16."""
        return self.cast(float16)

    def int(self) -> Tensor:
        """Cast to int32."""
        return self.cast(int32)

    def long(self) -> Tensor:
        """Cast to int64."""
        return self.cast(int64)

    def bool(self) -> Tensor:
        """Cast to bool (nonzero is True)."""
        return self.cast(bool_)

    def clone(self) -> Tensor:
        """A new tensor with the same values, in the same graph (handles are immutable, so
        this copies nothing)."""
        return self.reshape(self.shape) if self.requires_grad else self.detach()

    # ---- autodiff ---------------------------------------------------------------------------
    def detach(self) -> Tensor:
        """The same values, cut from the graph (requires no grad)."""
        return wrap(self._h, self.shape, self.dtype, self.device)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make this leaf tensor collect gradients in ``.grad`` (needs an autodiff device)."""
        if not requires_grad:
            if self._node is not None and not isinstance(self._node, AccumulateGrad):
                raise ArgumentError("requires_grad_(False) on a tensor computed from others: "
                                    "use detach() instead")
            self.requires_grad, self._node = False, None
            return self
        if not self.device.is_autodiff:
            raise DeviceError(f"gradients need an autodiff device: create the tensor on "
                              f"pyburn.device({self.device.name!r}).autodiff()")
        if not self.dtype.is_floating_point:
            raise DTypeError(f"only floating-point tensors can require grad, got "
                             f"{self.dtype.name}")
        self.requires_grad = True
        leaf_node(self)
        return self

    def register_post_accumulate_grad_hook(self, hook: Hook) -> RemovableHandle:
        """Call ``hook(self)`` in every backward pass, once this leaf's ``.grad`` holds the
        gradient of the whole pass (added to what it held before): once per leaf and pass,
        with leaves in the order the pass finishes them. Returns a handle whose
        ``remove()`` unregisters the hook. `autodiff.grad`, which leaves ``.grad`` alone,
        calls no hook. PyTorch's method of the same name.

        >>> import pyburn
        >>> w = pyburn.ones(2, device=pyburn.device("flex").autodiff(), requires_grad=True)
        >>> handle = w.register_post_accumulate_grad_hook(lambda t: print(t.grad.tolist()))
        >>> (3 * w).sum().backward()
        [3.0, 3.0]
        >>> handle.remove()
        """
        if not callable(hook):
            raise ArgumentError(f"a hook must be callable, got {type(hook).__name__}")
        if not self.requires_grad:
            raise ArgumentError("register_post_accumulate_grad_hook on a tensor that does not "
                                "require grad: call requires_grad_() first")
        if not self.is_leaf:
            raise ArgumentError("register_post_accumulate_grad_hook on a tensor computed from "
                                "others: only leaf tensors accumulate .grad")
        return add_post_accumulate_hook(leaf_node(self), hook)

    def assign_(self, new: Tensor) -> Tensor:
        """Make this tensor hold `new`'s values (cast to this dtype; the shape must match):
        the one in-place mechanism behind ``t[k] = v``, ``copy_``, ``add_`` and friends.
        Graphs that recorded this tensor keep its old values. A leaf that requires grad can
        only be changed under ``pyburn.no_grad()`` (as an optimizer step does)."""
        if not isinstance(new, Tensor):
            raise DTypeError(f"assign_ needs a tensor, got {type(new).__name__}")
        if new.shape != self.shape:
            raise ShapeError(f"in-place update of a tensor of shape {self.shape} with a result "
                             f"of shape {new.shape}")
        if new.device is not self.device:
            raise DeviceError(f"in-place update of a tensor on {self.device.name} with one on "
                              f"{new.device.name}")
        grad_mode = is_grad_enabled()
        if grad_mode and self.requires_grad and self.is_leaf:
            raise ArgumentError("a leaf tensor that requires grad cannot be changed in place "
                                "while gradients are recorded; do it under pyburn.no_grad()")
        new = new.cast(self.dtype)
        self._h = new._h
        if grad_mode:  # the tensor is now the new computation (or a constant)
            self._node, self.requires_grad = new._node, new.requires_grad
        return self

    def copy_(self, src: Tensor) -> Tensor:
        """Copy `src`'s values into this tensor (broadcast to its shape, moved and cast)."""
        src = src.to(self.device) if isinstance(src, Tensor) else src
        return self.assign_(src.broadcast_to(self.shape))

    @property
    def is_leaf(self) -> bool:
        """True for tensors not computed by a recorded op (they collect ``.grad``)."""
        return self._node is None or isinstance(self._node, AccumulateGrad)

    def contiguous(self) -> Tensor:
        """This tensor (pyburn's backends manage memory layout themselves)."""
        return self

    # ---- readback ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The elements as C-ordered little-endian bytes."""
        return self.device.backend.to_bytes(self._h, self.shape, self.dtype)

    async def to_bytes_async(self) -> bytes:
        """Awaitable `to_bytes`, for platforms that cannot block (browsers)."""
        return await self.device.backend.to_bytes_async(self._h, self.shape, self.dtype)

    def tolist(self) -> Any:
        """The values as (nested) Python lists; a 0-d tensor gives a scalar."""
        return buffer.nest(buffer.unpack(self.to_bytes(), self.dtype), self.shape)

    async def tolist_async(self) -> Any:
        """Awaitable `tolist`."""
        return buffer.nest(buffer.unpack(await self.to_bytes_async(), self.dtype), self.shape)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        self._check_one_element("item()")
        return buffer.unpack(self.to_bytes(), self.dtype)[0]

    async def item_async(self) -> Any:
        """Awaitable `item`."""
        self._check_one_element("item()")
        return buffer.unpack(await self.to_bytes_async(), self.dtype)[0]

    def numpy(self) -> Any:
        """A new writable numpy array with the values (needs numpy)."""
        return _to_numpy(self.to_bytes(), self)

    async def numpy_async(self) -> Any:
        """Awaitable `numpy`."""
        return _to_numpy(await self.to_bytes_async(), self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        array = self.numpy()
        return array if dtype is None else array.astype(dtype)

    def _check_one_element(self, what: str) -> None:
        if self.numel() != 1:
            raise ArgumentError(f"{what} needs a tensor with one element, got shape {self.shape}")

    def __bool__(self) -> bool:
        self._check_one_element("bool()")
        return bool(self.item())

    def __int__(self) -> int:
        self._check_one_element("int()")
        return int(self.item())

    def __float__(self) -> float:
        self._check_one_element("float()")
        return float(self.item())

    def __index__(self) -> int:
        if not (self.dtype.is_integer or self.dtype.is_bool):
            raise DTypeError(f"only integer tensors can be used as an index, got {self.dtype.name}")
        return int(self)

    def __len__(self) -> int:
        if not self.shape:
            raise ShapeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise ShapeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return format_tensor(self)

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.to_bytes(), self.shape, self.dtype.name, self.device.name))


def _in_place(name: str) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self.assign_(getattr(self, name)(*args, **kwargs))

    method.__name__ = f"{name}_"
    method.__doc__ = f"In-place form of `{name}`: this tensor takes the result."
    return method


#: ops with an in-place twin (``t.add_(1)``): the result replaces the tensor's values
IN_PLACE = ("add", "sub", "mul", "div", "pow", "clamp", "neg", "abs", "exp", "log", "sqrt",
            "sigmoid", "tanh", "floor", "ceil", "round", "trunc", "masked_fill", "scatter",
            "scatter_add", "index_put", "reciprocal", "remainder", "fmod", "sign")


def _rebuild(data: bytes, shape: Shape, dtype: str, device: str) -> Tensor:
    """The tensor a pickle holds: its bytes on the device of that name."""
    target, dt = as_device(device), as_dtype(dtype)
    check_dtype_on(dt, target)
    return wrap(target.backend.from_bytes(data, tuple(shape), dt), tuple(shape), dt, target)


def _is_dtype_name(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        as_dtype(value)
    except DTypeError:
        return False
    return True


def _move(x: Tensor, target: Device) -> Tensor:
    if target is x.device:
        return x
    check_dtype_on(x.dtype, target)
    if target.backend is x.device.backend:  # to or from the autodiff form of one device
        handle = x._h
    else:
        handle = target.backend.from_bytes(x.to_bytes(), x.shape, x.dtype)
    out = wrap(handle, x.shape, x.dtype, target)
    if target.is_autodiff and x.dtype.is_floating_point:
        record(out, "move", (x,), {})
    return out


def _to_numpy(data: bytes, x: Tensor) -> Any:
    np = require_numpy()
    dtype = "bool" if x.dtype is bool_ else x.dtype.name
    return np.frombuffer(bytearray(data), dtype=dtype).reshape(x.shape)


def wrap(handle: Any, shape: Shape, dtype: DType, device: Device) -> Tensor:
    """A Tensor for a backend handle whose shape and dtype the caller knows (no graph)."""
    t = object.__new__(Tensor)
    t._h = handle
    t.shape = shape
    t.dtype = dtype
    t.device = device
    t.requires_grad = False
    t.grad = None
    t._node = None
    return t


#: the ONNX exporter's tracer while ``pyburn.onnx.export`` runs a forward pass, else None;
#: `result` and ``Module.__call__`` report to it (pyburn/onnx/exporter/trace.py)
_tracer: Any = None


def result(handle: Any, shape: Shape, dtype: DType, rule: str, inputs: tuple[Tensor, ...],
           **ctx: Any) -> Tensor:
    """The Tensor for the output of a differentiable primitive: on an autodiff device it is
    recorded with the backward `rule` (a key of ``pyburn.autodiff.rules.RULES``), the inputs
    and the saved arguments `ctx`."""
    device = inputs[0].device
    out = wrap(handle, shape, dtype, device)
    if device.is_autodiff:
        for t in inputs:
            if t.requires_grad:  # the cheap test first: inference records nothing
                link(out, rule, inputs, ctx)
                break
    if _tracer is not None:
        _tracer.primitive(out, rule, inputs, ctx)
    return out


def recording(*inputs: Tensor) -> bool:
    """Whether an op on `inputs` would be recorded: for a gradient (an input that requires
    one, on an autodiff device, while gradients are recorded) or by an ONNX export tracing
    the call."""
    return _tracer is not None or (inputs[0].device.is_autodiff and is_grad_enabled()
                                   and any(t.requires_grad for t in inputs))


def remembered(memo: dict[str, Any] | None, inputs: tuple[Tensor | None, ...],
               make: Callable[[], Any]) -> Any:
    """What `make()` computes from `inputs`, kept in `memo` (a caller's dict; None keeps
    nothing) and given again while the same tensors come in: a tensor's values never change
    under the same handle (an update, in place or not, gives it a new one), so the same
    handles mean the same values. A weight prepared once per model (folded, packed) rather
    than once per call."""
    if memo is None:
        return make()
    handles = tuple(None if t is None else t._h for t in inputs)
    held = memo.get("from")
    if held is None or any(a is not b for a, b in zip(held, handles)):
        memo["value"], memo["from"] = make(), handles
    return memo["value"]


def check_dtype_on(dtype: DType, device: Device) -> None:
    """Raise DTypeError if `device` cannot store `dtype`."""
    if dtype not in device.backend.dtypes:
        raise DTypeError(f"device {device.name!r} does not support {dtype.name}")


def install(functions: dict[str, Any]) -> None:
    """Make each function a method of Tensor under its key (``t.f(...)`` is ``f(t, ...)``),
    with an in-place twin ``f_`` for the names in IN_PLACE."""
    for name, fn in functions.items():
        setattr(Tensor, name, fn)
        if name in IN_PLACE:
            setattr(Tensor, f"{name}_", _in_place(name))
