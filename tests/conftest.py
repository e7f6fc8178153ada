"""Shared by every test directory: any test that takes a `device` argument runs once per
device of ``pyburn.available_devices()``, with the device's name as the first part of its id."""

from __future__ import annotations

import pytest

import pyburn

DEVICES = pyburn.available_devices()


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `device` first, so that a test id starts with the device name."""
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES, ids=[d.name for d in DEVICES])
