"""Fixtures the backend suites share."""

from __future__ import annotations

import pytest

import pyburn


@pytest.fixture(scope="module")
def fused() -> pyburn.Device:
    """The wgpu device with fusion, whatever $PYBURN_FUSION says (the fusion suites skip
    themselves where there is no wgpu adapter)."""
    from pyburn.backends.wgpu.fusion import FusionBackend

    dev = pyburn.device("wgpu")
    if not isinstance(dev.backend, FusionBackend):
        pytest.skip("PYBURN_FUSION=0: the wgpu device is unfused")
    return dev
