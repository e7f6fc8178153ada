"""The wgpu backend with fusion off, as a device kind of its own: ``device("wgpu_nofusion")``.

``PYBURN_FUSION=0`` turns fusion off for the whole process; this kind lets one process hold
both forms side by side (the test suite runs the conformance, autodiff and functional suites
on each, and the fusion tests compare them). It is never the default device and `pyburn info`
does not list it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import wgpu
from .base import Registration

if TYPE_CHECKING:
    from .wgpu.backend import WgpuBackend


def create(index: int) -> WgpuBackend:
    """The plain wgpu backend on adapter `index`."""
    return wgpu.create(index, fusion=False)


#: no rank: only ever chosen by name
REGISTRATION = Registration("wgpu_nofusion", wgpu.unavailable_reason, create, None)
