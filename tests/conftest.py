"""Shared by every test directory: any test that takes a `device` argument runs once per
device of ``pyburn.available_devices()``, with the device's name as the first part of its id.

Where wgpu is available, the suites that check every primitive (conformance, autodiff,
nn/functional) also run on ``wgpu_nofusion``, the wgpu backend with fusion off, so both
forms of the GPU backend are held to the same references.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pyburn
from pyburn.backends import wgpu

DEVICES = pyburn.available_devices()
#: test directories (relative to tests/) run on the unfused wgpu backend as well
BOTH_WGPU_FORMS = ("conformance", "autodiff", str(Path("nn", "functional")))
NOFUSION = ([pyburn.device("wgpu_nofusion")]
            if wgpu.unavailable_reason() is None and wgpu.fusion_enabled() else [])


def _devices_for(path: Path) -> list[pyburn.Device]:
    where = str(path.relative_to(Path(__file__).parent))
    both = any(where.startswith(suite) for suite in BOTH_WGPU_FORMS)
    return DEVICES + NOFUSION if both else DEVICES


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `device` first, so that a test id starts with the device name."""
    if "device" in metafunc.fixturenames:
        devices = _devices_for(Path(str(metafunc.definition.path)))
        metafunc.parametrize("device", devices, ids=[d.name for d in devices])
