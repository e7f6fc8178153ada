"""Moving a tensor to another device or dtype while keeping the object (`rebind`).

Identity matters: optimizers hold the parameter objects themselves (their state is keyed by
them) and modules hold their buffers, so moving a model or loading weights must change what
a tensor holds, never which tensor a module or an optimizer refers to.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..devices import Device
from ..dtypes import DType
from ..tape import no_grad


def convert(x: Tensor, device: Device, dtype: DType) -> Tensor:
    """`x` on `device` in `dtype`, unrecorded; the cast happens on whichever side stores both
    dtypes (an int64 tensor bound for a device without int64 is narrowed before it moves)."""
    with no_grad():
        x = x.detach()
        if dtype in x.device.backend.dtypes:
            return x.cast(dtype).to(device)
        return x.to(device).cast(dtype)


def rebind(t: Tensor, device: Device, dtype: DType, *, learnable: bool = False) -> None:
    """Make `t` hold its own values on `device` in `dtype`, keeping the object.

    Gradient state follows the device: between two autodiff (or two plain) devices
    ``requires_grad`` is kept (a frozen parameter stays frozen); onto an autodiff device a
    floating-point tensor starts requiring grad if it is `learnable` (a module's
    `Parameter`); onto a plain device nothing does. An existing ``.grad`` moves along while
    the tensor still requires grad."""
    if device is t.device and dtype is t.dtype:
        return
    if device.is_autodiff == t.device.is_autodiff:
        wants_grad = t.requires_grad
    else:
        wants_grad = device.is_autodiff and learnable
    wants_grad = wants_grad and dtype.is_floating_point
    moved = convert(t, device, dtype)
    grad = convert(t.grad, device, dtype) if wants_grad and t.grad is not None else None
    t._h, t.dtype, t.device = moved._h, dtype, device
    t._node, t.requires_grad, t.grad = None, False, grad
    if wants_grad:
        t.requires_grad_()
