"""Fixtures of the layer tests (the `device` parametrization comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

import pyburn


@pytest.fixture
def other_device(device):
    """A device other than `device`; skips where only one is available."""
    others = [d for d in pyburn.available_devices() if d is not device]
    if not others:
        pytest.skip("needs a second available device")
    return others[0]
