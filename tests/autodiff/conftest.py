"""Fixtures of the autodiff suite.

tests/conftest.py parametrizes `device` over every available device; here `dev` is that
device's autodiff form (``device.autodiff()``, named "autodiff+cpu"), so every test that takes
`dev` runs once per available device. `dtype` runs a test in float64 (where the device has
it: the tightest check) and in float32 (every device's default, with looser tolerances).
"""

from __future__ import annotations

import pytest

import pyburn


@pytest.fixture
def dev(device: pyburn.Device) -> pyburn.Device:
    """The autodiff form of the device under test."""
    return device.autodiff()


@pytest.fixture(params=["float64", "float32"])
def dtype(request: pytest.FixtureRequest, dev: pyburn.Device) -> str:
    """The name of a float dtype to check gradients in on `dev`: float64 (skipped where the
    device lacks it), and float32, every device's default, with float32's tolerances."""
    if request.param not in ("float32", *dev.caps):
        pytest.skip(f"{dev.name} has no {request.param}")
    return request.param


@pytest.fixture
def float64(dev: pyburn.Device) -> None:
    """Skip on a device without float64 (finite differences need it)."""
    if "float64" not in dev.caps:
        pytest.skip(f"{dev.name} has no float64")
