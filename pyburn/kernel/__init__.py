"""Kernels written once in Python, run on every device: ``@pyburn.kernel``.

>>> import pyburn
>>> from pyburn.kernel import Tensor, f32, i32, global_id
>>> @pyburn.kernel
... def axpy(out: Tensor[f32], x: Tensor[f32], y: Tensor[f32], a: f32, n: i32):
...     i = global_id(0)
...     if i < n:
...         out[i] = a * x[i] + y[i]
>>> x, y = pyburn.arange(5.0, device="flex"), pyburn.ones(5, device="flex")
>>> axpy[1, 64](5, x, y, 2.0, 5).tolist()
[1.0, 3.0, 5.0, 7.0, 9.0]

A kernel is a restricted, typed subset of Python (`lang`), lowered to a small IR (`ir`) and
run by the interpreter on flex (the reference semantics, pure Python: it runs under Pyodide
without numpy), a vectorised numpy executor on cpu, and WGSL on wgpu, natively and in the
browser. A launch, ``kernel[grid, workgroup](*args)``, returns the tensors the kernel writes
(an output may be passed as a tensor, its starting contents, or as a shape: zeros); its
arguments never change. docs/kernels.md describes the language.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

from . import ir
from .ir import F32 as f32
from .ir import I32 as i32
from .ir import U32 as u32
from .ir import KernelError
from .lang import BUILTINS, MATH, Builtin, Const, Tensor
from .launch import KernelFunction
from .op import gradcheck, op
from .raw import wgsl
from .tune import autotune

globals().update(BUILTINS)
globals().update({name: Builtin(name, op.doc) for name, op in MATH.items()})


def kernel(fn: Callable) -> KernelFunction:
    """Make `fn`, written in the kernel language, a kernel: ``fn[grid, workgroup](*args)``
    launches it."""
    return KernelFunction(fn)


class _KernelModule(types.ModuleType):
    """``pyburn.kernel`` is the decorator too: ``@pyburn.kernel``."""

    def __call__(self, fn: Callable) -> KernelFunction:
        return kernel(fn)


sys.modules[__name__].__class__ = _KernelModule

__all__ = ["Builtin", "Const", "KernelError", "KernelFunction", "Tensor", "autotune", "f32",
           "gradcheck", "i32", "ir", "kernel", "op", "u32", "wgsl", *BUILTINS, *MATH]
