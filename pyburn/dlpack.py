"""DLPack: tensors shared with numpy, PyTorch and any other library that speaks it.

``torch.from_dlpack(t)`` and ``np.from_dlpack(t)`` read a pyburn tensor (`Tensor.__dlpack__`,
`Tensor.__dlpack_device__`); ``pyburn.from_dlpack(x)`` reads theirs. Both directions go
through numpy's own DLPack support, so numpy is needed (``pip install 'pyburn[numpy]'``).

What is shared (docs/array_api.md says more)
    On the cpu device a handle is a numpy array and the export hands out its memory: a
    consumer that writes into what it got writes into the tensor. A handle DLPack cannot
    carry safely is first replaced by a private C-ordered copy, once: one that is read-only
    (a tensor made from Python values wraps immutable ``bytes``; a broadcast view), one with
    negative strides (a flipped view: PyTorch cannot import them) or one at an unaligned
    address. Every later export of that tensor shares the copy. Importing on the cpu
    device shares the producer's memory the same way. flex, wgpu, wasm and remote devices
    keep their elements elsewhere, so they export and import a copy (through the host).

    Sharing is of memory, not of pyburn's values: pyburn never writes into a handle, so
    its in-place ops (``t.add_(1)``, ``t[0] = 5``) give the tensor a new handle, which the
    other side no longer sees, and the views of a handle (``t.T``, ``t[1:]`` and others
    computed on the cpu device) see what a consumer writes into it.

>>> import numpy as np, pyburn
>>> t = pyburn.from_dlpack(np.arange(3, dtype=np.float32))
>>> t.device, t.tolist()
(device('cpu'), [0.0, 1.0, 2.0])
"""

from __future__ import annotations

from typing import Any

from ._tensor import Tensor, check_dtype_on, install, wrap
from .devices import Device
from .devices import device as as_device
from .dtypes import as_dtype
from .numpy_support import require_numpy

#: DLPack's device type of host memory (``kDLCPU``): every export is there
CPU_DEVICE = (1, 0)


def _dlpack_device(x: Tensor) -> tuple[int, int]:
    """DLPack's (device type, index) of what `__dlpack__` hands out: host memory, also for
    a tensor on a GPU, whose export is a copy there."""
    return CPU_DEVICE


def _dlpack(x: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """A DLPack capsule of this tensor's elements (the standard's ``__dlpack__``): shared
    on the cpu device, a copy elsewhere (`copy=False` then raises BufferError); `stream`
    must be None (host memory has none)."""
    if stream is not None:
        raise BufferError(f"a pyburn export is host memory, which takes no stream; got {stream!r}")
    if dl_device is not None and tuple(dl_device) != CPU_DEVICE:
        raise BufferError(f"pyburn exports to host memory {CPU_DEVICE}, not to {dl_device}")
    array = _exportable(x, copy)
    return array.__dlpack__(max_version=max_version) if max_version else array.__dlpack__()


def _exportable(x: Tensor, copy: bool | None) -> Any:
    """The numpy array whose memory the export hands out."""
    backend = x.device.backend
    array = None if copy else backend.host_array(x._h)
    if array is not None and _shareable(array):
        return array
    if copy is False:
        where = "a view DLPack cannot carry" if array is not None else "not in host memory"
        raise BufferError(f"copy=False, but this {x.device.name} tensor's elements are {where}")
    fresh = x.numpy()
    if array is not None:  # the cpu device: the tensor keeps the copy, so exports share it
        x._h = backend.from_host_array(fresh, x.dtype)
    return fresh


def _shareable(array: Any) -> bool:
    """Whether DLPack consumers may be given `array`'s memory: writable (they may write),
    aligned, and with no negative stride (PyTorch aborts the process on one)."""
    flags = array.flags
    return flags.writeable and flags.aligned and all(s >= 0 for s in array.strides)


def from_dlpack(x: Any, *, device: Device | str | None = None, copy: bool | None = None) -> Tensor:
    """A tensor of `x`'s elements, `x` being any object with ``__dlpack__`` (a numpy array,
    a PyTorch CPU tensor, ...). On the cpu device (the default: DLPack data comes from host
    memory) it shares `x`'s memory unless `copy` is True; on another device it holds a copy
    (`copy=False` then raises BufferError). A dtype pyburn lacks raises DTypeError.

    >>> import torch, pyburn
    >>> source = torch.zeros(3)
    >>> t = pyburn.from_dlpack(source)
    >>> source[0] = 7.0  # shared: pyburn sees the write
    >>> t.tolist()
    [7.0, 0.0, 0.0]
    """
    np = require_numpy()
    target = as_device("cpu" if device is None else device)
    array = np.from_dlpack(x, copy=copy)
    dtype = as_dtype(array.dtype.name)
    check_dtype_on(dtype, target)
    handle = target.backend.from_host_array(array, dtype)
    if copy is False and target.backend.host_array(handle) is not array:
        raise BufferError(f"copy=False, but a {target.name} tensor cannot share host memory")
    return wrap(handle, tuple(array.shape), dtype, target)

install({"__dlpack__": _dlpack, "__dlpack_device__": _dlpack_device})
