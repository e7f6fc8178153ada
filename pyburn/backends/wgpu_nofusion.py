"""The wgpu backend with fusion off, as a device kind of its own: ``device("wgpu_nofusion")``.

``PYBURN_FUSION=0`` turns fusion off for the whole process; this kind lets one process hold
both forms side by side (the test suite runs the conformance, autodiff and functional suites
on each, and the fusion tests compare them). It is never the default device and `pyburn info`
does not list it.
"""

from __future__ import annotations

from . import wgpu
from .wgpu.backend import WgpuBackend

#: after every other backend: only chosen by name
PRIORITY = 90


def unavailable_reason() -> str | None:
    """Why wgpu cannot run here, or None."""
    return wgpu.unavailable_reason()


def priority() -> int:
    """Never the default."""
    return PRIORITY


def create(index: int) -> WgpuBackend:
    """The plain wgpu backend on adapter `index`."""
    return wgpu.create(index, fusion=False)
