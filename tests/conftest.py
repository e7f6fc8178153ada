"""Shared by every test directory: any test that takes a `device` argument runs once per
device of ``pyburn.available_devices()``, with the device's name as the first part of its id.

Where wgpu is available, the suites that check every primitive (conformance, autodiff,
nn/functional) also run on ``wgpu_nofusion``, the wgpu backend with fusion off, so both
forms of the GPU backend are held to the same references.

wgpu is part of every run: without an adapter (a GPU, or Mesa's CPU driver) the run stops at
once, unless ``PYBURN_SKIP=wgpu`` says to run without it. So a wgpu test that finds no adapter
was skipped on purpose (or runs inside Pyodide under Node, which has no WebGPU).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: the parts of the run $PYBURN_SKIP turns off on purpose (``make test`` reads it too)
SKIPPED = set(os.environ.get("PYBURN_SKIP", "").replace(",", " ").split())
if "wgpu" in SKIPPED:  # before pyburn looks for adapters: the whole run sees none
    os.environ["PYBURN_WGPU"] = "0"

import pyburn  # noqa: E402
from pyburn.backends import wgpu  # noqa: E402

DEVICES = pyburn.available_devices()
#: test directories (relative to tests/) run on the unfused wgpu backend as well
BOTH_WGPU_FORMS = ("conformance", "autodiff", str(Path("nn", "functional")))
NOFUSION = ([pyburn.device("wgpu_nofusion")]
            if wgpu.unavailable_reason() is None and wgpu.fusion_enabled() else [])


def _devices_for(path: Path) -> list[pyburn.Device]:
    where = str(path.relative_to(Path(__file__).parent))
    both = any(where.startswith(suite) for suite in BOTH_WGPU_FORMS)
    return DEVICES + NOFUSION if both else DEVICES


def pytest_configure(config: pytest.Config) -> None:
    """Stop before collecting where wgpu cannot run and the user did not skip it."""
    reason = wgpu.unavailable_reason()
    if reason and "wgpu" not in SKIPPED:
        raise pytest.UsageError(f"the wgpu tests cannot run: {reason}. Install what it names "
                                "(make system-deps), or set PYBURN_SKIP=wgpu to run without them.")


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `device` first, so that a test id starts with the device name."""
    if "device" in metafunc.fixturenames:
        devices = _devices_for(Path(str(metafunc.definition.path)))
        metafunc.parametrize("device", devices, ids=[d.name for d in devices])
