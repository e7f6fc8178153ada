"""The cpu backend: numpy, on any machine (and in Pyodide where numpy is loaded).

This module imports without numpy: numpy is first imported when `unavailable_reason` looks
for it or `create` builds the backend. Registered by `REGISTRATION`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import Registration

if TYPE_CHECKING:
    from .backend import CpuBackend


def unavailable_reason() -> str | None:
    """None when numpy imports, else a sentence saying how to get it."""
    try:
        import numpy  # noqa: F401  (optional: this module imports without numpy)
    except ImportError:
        return "numpy is not installed (pip install 'pyburn[numpy]')"
    return None


def create(index: int) -> CpuBackend:
    """A cpu backend instance (every index is an independent, identical CPU device); the
    first one sets glibc's heap thresholds for the process (`heap.keep_heap`)."""
    # optional: numpy, which the backend needs (this module imports without it); heap and its
    # ctypes load with the backend
    from .backend import CpuBackend
    from .heap import keep_heap

    keep_heap()
    return CpuBackend()


#: the default-device rank (lower first): after a hardware wgpu adapter, before a software one
RANK = 20
REGISTRATION = Registration("cpu", unavailable_reason, create, RANK)

__all__ = ["REGISTRATION", "create", "unavailable_reason"]
