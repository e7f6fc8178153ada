"""`Parameter`: the tensor type that modules register as learnable state (moved between
devices, keeping the object, by ``pyburn.ops.rebinding``)."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor
from ..dtypes import default_float
from ..errors import ArgumentError, DTypeError
from ..ops.creation import from_numpy, tensor, zeros
from ..ops.rebinding import convert


class Parameter(Tensor):
    """A tensor that a `Module` registers as learnable when assigned as an attribute.

    On an autodiff device it is a leaf that requires grad (unless ``requires_grad=False``);
    on a plain device it is an ordinary tensor that modules still recognise by its type. It
    shares `data`'s values (no copy: tensor values are immutable).

    >>> import pyburn
    >>> from pyburn.nn import Parameter
    >>> w = Parameter(pyburn.zeros(2, device=pyburn.device("flex").autodiff()))
    >>> w.requires_grad, w.is_leaf
    (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor, requires_grad: bool = True) -> Parameter:
        if not isinstance(data, Tensor):
            raise ArgumentError(f"Parameter wraps a pyburn Tensor, got {type(data).__name__}")
        if requires_grad and not data.dtype.is_floating_point:
            raise DTypeError(f"only floating-point parameters can require grad, got "
                             f"{data.dtype.name}: pass requires_grad=False")
        p = object.__new__(cls)
        p._h, p.shape, p.dtype, p.device = data._h, data.shape, data.dtype, data.device
        p.requires_grad, p.grad, p._node = False, None, None
        if requires_grad and data.device.is_autodiff:
            p.requires_grad_()
        return p

    def __init__(self, data: Tensor, requires_grad: bool = True):
        """Everything happens in ``__new__`` (Tensor's own constructor refuses to run)."""

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self) -> tuple:
        # by value, as a Parameter again: pickling and copy.deepcopy of whole models
        return (Parameter, (self.detach(), self.requires_grad))


def empty_parameter(shape: tuple[int, ...], device: Any = None, dtype: Any = None) -> Parameter:
    """A new Parameter of `shape` on `device` (default: the default device) in `dtype`
    (default: float32), holding zeros until a layer's ``reset_parameters`` fills it: the
    ``device=`` / ``dtype=`` arguments every layer constructor takes end up here."""
    return Parameter(zeros(shape, dtype=dtype or default_float, device=device))


def as_value(value: Any, like: Tensor, name: str) -> Tensor:
    """`value` (a pyburn tensor, a numpy array, or nested lists) as a tensor on `like`'s
    device and in its dtype, ready to be copied into `like`."""
    if isinstance(value, Tensor):
        return convert(value, like.device, like.dtype)
    try:
        if hasattr(value, "__array_interface__") and hasattr(value, "astype"):
            # cast in numpy first: the device may not store the array's own dtype
            return from_numpy(value.astype("bool" if like.dtype.is_bool else like.dtype.name),
                              device=like.device)
        return tensor(value, dtype=like.dtype, device=like.device)
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"state_dict entry {name!r}: cannot make a tensor from a "
                            f"{type(value).__name__} ({exc})") from None
