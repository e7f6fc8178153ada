"""The cpu backend: numpy, on any machine (and in Pyodide where numpy is loaded).

This module stays importable without numpy: ``unavailable_reason`` says why the backend
cannot run, and numpy is first imported by `create`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import DeviceError

if TYPE_CHECKING:
    from .backend import CpuBackend

_INSTALL = "pip install 'pyburn[numpy]'"


def unavailable_reason() -> str | None:
    """None when numpy 2 or newer imports, else a sentence saying what is missing."""
    try:
        import numpy
    except ImportError:
        return f"numpy is not installed ({_INSTALL})"
    major = int(numpy.__version__.split(".")[0])
    if major < 2:
        return f"numpy {numpy.__version__} is too old: the cpu backend needs numpy 2 ({_INSTALL})"
    return None


def create(index: int) -> CpuBackend:
    """The backend of device ``cpu`` (the machine has one: only index 0 exists)."""
    if index != 0:
        raise DeviceError(f"there is one cpu device, 'cpu' (index 0); got index {index}")
    from .backend import CpuBackend

    return CpuBackend()
