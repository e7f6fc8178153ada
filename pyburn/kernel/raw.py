"""Shaders you already have: ``pyburn.kernel.wgsl(source)`` runs a WGSL compute shader on a
wgpu device (natively and in the browser), its storage buffers bound to tensors by name.

>>> import pyburn
>>> from pyburn.kernel import wgsl
>>> double = wgsl('''
... @group(0) @binding(0) var<storage, read> x: array<f32>;
... @group(0) @binding(1) var<storage, read_write> out: array<f32>;
... @compute @workgroup_size(64)
... fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
...     if (gid.x < arrayLength(&x)) { out[gid.x] = 2.0 * x[gid.x]; }
... }''')
>>> x = pyburn.arange(3.0, device="wgpu")
>>> double[1](x=x, out=(3,)).tolist()
[0.0, 2.0, 4.0]

Every ``var<storage, ...> name: array<T>`` of group 0 is a keyword argument of the launch,
``shader[grid](**buffers)``: a tensor whose dtype is T's (f32: float32, i32: int32), or a
list of ints for a read-only ``array<i32>`` or ``array<u32>`` (sizes, strides); a
``read_write`` one may be given as its shape (zeros). The launch returns the ``read_write``
buffers as new tensors, in binding order (one tensor, or a tuple): as for kernels, the
arguments never change. The workgroup size is the shader's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor, wrap
from ..dtypes import float32, int32
from .ir import KernelError
from .launch import dims, output

_STORAGE = re.compile(r"@group\(\s*0\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var<\s*storage\s*,\s*"
                      r"(read|read_write)\s*>\s*(\w+)\s*:\s*array<\s*(\w+)\s*>")
_DTYPES = {"f32": float32, "i32": int32}


@dataclass(frozen=True)
class Buffer:
    """A storage buffer of the shader: its binding, name, element type and access."""

    binding: int
    name: str
    element: str
    writable: bool


class RawShader:
    """A WGSL compute shader and its storage buffers; ``shader[grid](**buffers)`` runs it."""

    def __init__(self, source: str, entry: str = "main"):
        self.source = source
        self.entry = entry
        self.buffers = tuple(sorted((Buffer(int(k), name, element, access == "read_write")
                                     for k, access, name, element in _STORAGE.findall(source)),
                                    key=lambda b: b.binding))
        if not self.buffers:
            raise KernelError("the shader declares no @group(0) storage buffers "
                              "(var<storage, read> name: array<f32>)")
        for b in self.buffers:
            if b.element not in _DTYPES and not (b.element == "u32" and not b.writable):
                raise KernelError(f"buffer {b.name}: array<{b.element}>; a shader's buffers "
                                  "hold f32 or i32 (or u32 words, read-only)")

    def __getitem__(self, grid: Any) -> Any:
        grid3 = dims(grid, "grid")
        return lambda **buffers: self.run(grid3, buffers)

    def run(self, grid: tuple[int, int, int], given: dict[str, Any]) -> Any:
        """Bind `given` to the buffers by name, dispatch, and return the written ones."""
        names = {b.name for b in self.buffers}
        unknown, missing = set(given) - names, names - set(given)
        if unknown or missing:
            raise KernelError(f"the shader's buffers are {', '.join(sorted(names))}: "
                              + (f"unknown {', '.join(sorted(unknown))}" if unknown else
                                 f"missing {', '.join(sorted(missing))}"))
        devices = {v.device.plain() for v in given.values() if isinstance(v, Tensor)}
        if len(devices) != 1 or next(iter(devices)).backend.name != "wgpu":
            raise KernelError("a WGSL shader runs on one wgpu device: give its tensors there "
                              f"(got {', '.join(sorted(d.name for d in devices)) or 'none'})")
        from .wgsl_exec import bind_range, gpu_of, prepared  # import time: wgpu's modules

        device = devices.pop()
        gpu, ready = gpu_of(device.backend)
        bindings, written, held = {}, [], []  # held until dispatched: a buffer no one
        # holds goes back to the pool
        for b in self.buffers:
            value = given[b.name]
            if isinstance(value, (list, tuple)) and not b.writable:  # words
                if not all(isinstance(v, int) for v in value):
                    raise KernelError(f"buffer {b.name} takes a tensor or a list of ints")
                bindings[b.binding] = gpu.meta.binding(list(value))
                continue
            t = self._tensor(b, value, device)
            bound = prepared(gpu, ready(t._h), b.writable)
            bindings[b.binding], offset = bind_range(gpu, bound, f"buffer {b.name}")
            if offset:  # the shader reads from element 0 of its binding
                bound = prepared(gpu, bound, True)
                bindings[b.binding], _ = bind_range(gpu, bound, f"buffer {b.name}")
            held.append(bound)
            if b.writable:
                written.append(wrap(bound, bound.shape, bound.dtype, t.device))
        gpu.runtime.dispatch(self.source, self.entry, bindings, grid)
        del held
        return written[0] if len(written) == 1 else tuple(written)

    @staticmethod
    def _tensor(b: Buffer, value: Any, device: Any) -> Tensor:
        dtype = _DTYPES.get(b.element, int32)
        if b.writable:
            value = output(value, dtype, device)
        if not isinstance(value, Tensor) or value.dtype is not dtype:
            raise KernelError(f"buffer {b.name} (array<{b.element}>) takes a {dtype.name} "
                              f"tensor, not {getattr(value, 'dtype', type(value).__name__)}")
        return value


def wgsl(source: str, entry: str = "main") -> RawShader:
    """A WGSL compute shader to run on wgpu devices (see the module's docstring)."""
    return RawShader(source, entry)
