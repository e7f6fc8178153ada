"""Fixtures of the optimizer suite: tests/conftest.py parametrizes `device` over every
available device; `dev` is its autodiff form, where parameters collect gradients."""

from __future__ import annotations

import pytest

import pyburn


@pytest.fixture
def dev(device: pyburn.Device) -> pyburn.Device:
    """The autodiff form of the device under test."""
    return device.autodiff()
