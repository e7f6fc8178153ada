"""`@kernel` functions and their launches: ``my_kernel[grid, workgroup](*args)`` binds the
arguments, compiles the kernel for their signature (once: `KernelFunction.compiles` counts),
and runs it with the executor of the tensors' device: the interpreter on flex (and on any
device without one of its own), the numpy executor on cpu, WGSL on wgpu (desktop and
browser alike). The tensors a kernel writes come back as new tensors, in parameter order;
the arguments are never changed (pyburn's tensors are values).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .. import buffer, capture
from .._tensor import Tensor, wrap
from ..devices import Device
from ..devices import device as as_device
from ..dtypes import DType, float32, int32
from ..ops.creation import zeros
from . import interpret, ir, lang
from .ir import KernelError

#: a kernel's scalar types, by the dtype of the tensors that hold them
TYPE_OF: dict[DType, ir.Type] = {float32: ir.F32, int32: ir.I32}
DTYPE_OF = {kind: dtype for dtype, kind in TYPE_OF.items()}
Dims = tuple[int, int, int]


def dims(value: Any, what: str) -> Dims:
    """A launch's grid or workgroup (an int or up to three) as three sizes."""
    sizes = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(sizes) <= 3 or not all(isinstance(n, int) and n >= 1 for n in sizes):
        raise KernelError(f"a launch's {what} is a positive int or up to three of them, not "
                          f"{value!r}")
    return (*sizes, *(1,) * (3 - len(sizes)))  # type: ignore[return-value]


def output(value: Any, dtype: DType, device: Device) -> Any:
    """An output given as its shape (an int or a sequence of them): zeros of `dtype` on
    `device`; given as a tensor (its starting contents), or anything else, as it is."""
    if isinstance(value, int) or isinstance(value, (list, tuple)) and all(
            isinstance(n, int) for n in value):
        shape = (value,) if isinstance(value, int) else tuple(value)
        return zeros(*shape, dtype=dtype, device=device)
    return value


class KernelFunction:
    """A function of the kernel language (see `pyburn.kernel`), compiled on its first
    launch for each signature: the tensors' dtypes and dims, the scalars' types and the
    constants' values."""

    def __init__(self, fn: Callable):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.source = lang.Source.of(fn)
        try:
            annotations = inspect.get_annotations(fn, eval_str=True)
        except Exception as exc:
            raise self.source.error(self.source.tree, f"the annotations cannot be read: "
                                                      f"{exc}") from None
        params, self.constants = lang.parameters(self.source, annotations)
        self.params = tuple(params)
        self.names = [a.arg for a in self.source.tree.args.args]
        #: how many times the kernel was lowered (one per signature; tests count them)
        self.compiles = 0
        self._kernels: dict[tuple, ir.Kernel] = {}

    def __getitem__(self, launch: Any) -> Launch:
        if not (isinstance(launch, tuple) and len(launch) == 2):
            raise KernelError(f"launch {self.fn.__name__} as {self.fn.__name__}[grid, "
                              "workgroup](*args)")
        return Launch(self, dims(launch[0], "grid"), dims(launch[1], "workgroup"))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise KernelError(f"launch {self.fn.__name__} as {self.fn.__name__}[grid, "
                          "workgroup](*args): a grid of workgroups runs it")

    def __repr__(self) -> str:
        return f"<pyburn.kernel {self.fn.__name__} ({self.source.file}:" \
               f"{self.source.first_line})>"

    def scope(self) -> dict[str, Any]:
        """The names the kernel's body may read: its module's and its closure's."""
        names = dict(self.fn.__globals__)
        closure = inspect.getclosurevars(self.fn)
        names.update(closure.nonlocals)
        return names

    def specialise(self, params: tuple[ir.Param, ...], constants: dict[str, Any]) -> ir.Kernel:
        """The IR for this signature (lowered on first use, then kept)."""
        # by type and exact value: 3 and 3.0, 0.0 and -0.0 are different kernels
        key = (params, tuple(sorted((name, type(v).__name__, v.hex() if isinstance(v, float)
                                     else v) for name, v in constants.items())))
        found = self._kernels.get(key)
        if found is None:
            found = self._kernels[key] = lang.lower(self.source, self.scope(), params,
                                                    constants)
            self.compiles += 1
        return found


class Launch:
    """A kernel with its grid and workgroup, ready to be called with its arguments."""

    def __init__(self, function: KernelFunction, grid: Dims, group: Dims):
        self.function, self.grid, self.group = function, grid, group

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the kernel; the tensors it writes come back (one tensor, a tuple in parameter
        order, or None)."""
        bound = self.bind(args, kwargs)
        function = self.function
        constants = {name: bound[name] for name in function.constants}
        for name, value in constants.items():
            if not isinstance(value, (bool, int, float)):
                raise KernelError(f"{function.fn.__name__}: the constant {name} is an int, a "
                                  f"float or a bool, not {type(value).__name__}")
        device = self.device_of(bound)
        kernel = function.specialise(function.params, constants)
        tensors: dict[str, Tensor] = {}
        scalars: dict[str, Any] = {}
        for param in function.params:
            value = bound[param.name]
            if param.tensor:
                tensors[param.name] = self.tensor(param, value, device,
                                                  param.name in kernel.written)
            else:
                scalars[param.name] = self.scalar(param, value)
        # the executors compute on the handles themselves, outside the backend's methods
        capture.refuse("it launched a pyburn.kernel kernel")
        results = executor(device)(kernel, tensors, scalars, self.grid, self.group)
        # on the arguments' own device (an autodiff one, too), outside any graph
        out = tuple(wrap(results[name]._h, results[name].shape, results[name].dtype,
                         tensors[name].device) for name in kernel.written)
        return out[0] if len(out) == 1 else (out or None)

    def bind(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        names = self.function.names
        if len(args) > len(names):
            raise KernelError(f"{self.function.fn.__name__} takes {len(names)} arguments, "
                              f"got {len(args)}")
        bound = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in bound:
                raise KernelError(f"{self.function.fn.__name__}: unexpected or repeated "
                                  f"argument {name}")
            bound[name] = value
        missing = [n for n in names if n not in bound]
        if missing:
            raise KernelError(f"{self.function.fn.__name__}: missing {', '.join(missing)}")
        return bound

    def device_of(self, bound: dict[str, Any]) -> Device:
        """The arguments' device (outputs given as shapes are made there)."""
        devices = [v.device for v in bound.values() if isinstance(v, Tensor)]
        if len({d.plain() for d in devices}) > 1:
            raise KernelError(f"{self.function.fn.__name__}: tensors on different devices: "
                              f"{', '.join(sorted({d.name for d in devices}))}")
        return devices[0] if devices else as_device(None)

    def tensor(self, param: ir.Param, value: Any, device: Device, written: bool) -> Tensor:
        name = f"{self.function.fn.__name__}: {param.name}"
        dtype = DTYPE_OF[param.type]
        if written:
            value = output(value, dtype, device)
        if not isinstance(value, Tensor):
            raise KernelError(f"{name} is a Tensor[{param.type}] (or, for an output, its "
                              f"shape), not {type(value).__name__}")
        if value.dtype is not dtype:
            raise KernelError(f"{name} is a {param.type} tensor ({dtype.name}), not "
                              f"{value.dtype.name}")
        if value.ndim != param.ndim:
            raise KernelError(f"{name} has {param.ndim} dims, not {value.ndim} (shape "
                              f"{value.shape})")
        return value

    def scalar(self, param: ir.Param, value: Any) -> Any:
        kind = param.type
        ok = isinstance(value, (int, float)) if kind is ir.F32 else \
            isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            raise KernelError(f"{self.function.fn.__name__}: {param.name} is a {kind}, not "
                              f"{type(value).__name__} {value!r}")
        if kind is not ir.F32 and not (-(1 << 31) if kind is ir.I32 else 0) <= value < \
                (1 << (31 if kind is ir.I32 else 32)):
            raise KernelError(f"{self.function.fn.__name__}: {param.name} = {value} does not "
                              f"fit a {kind}")
        return value


Executor = Callable[[ir.Kernel, dict[str, Tensor], dict[str, Any], Dims, Dims],
                    dict[str, Tensor]]


def run_interpreted(kernel: ir.Kernel, tensors: dict[str, Tensor], scalars: dict[str, Any],
                    grid: Dims, group: Dims) -> dict[str, Tensor]:
    """The interpreter on any device: the tensors' elements as Python values, and back."""
    memory = {name: buffer.unpack(t.contiguous().to_bytes(), t.dtype)
              for name, t in tensors.items()}
    sizes = {name: t.shape for name, t in tensors.items()}
    interpret.run(kernel, memory, scalars, sizes, grid, group)
    out = {}
    for name in kernel.written:
        t = tensors[name]
        backend = t.device.plain().backend
        handle = backend.from_bytes(buffer.pack(memory[name], t.dtype), t.shape, t.dtype)
        out[name] = wrap(handle, t.shape, t.dtype, t.device.plain())
    return out


def executor(device: Device) -> Executor:
    """How kernels run on `device`: its backend's executor, else the interpreter."""
    name = device.backend.name
    if name == "remote":
        raise KernelError("kernels do not run on a remote device: launch on the server's")
    if name == "cpu":
        from .numpy_exec import run_numpy  # import time: numpy loads with the cpu device

        return run_numpy
    if name == "wgpu":
        from .wgsl_exec import run_wgsl  # import time: the WGSL code generator

        return run_wgsl
    return run_interpreted
