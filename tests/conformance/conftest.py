"""The conformance suite's fixtures (tests/conftest.py saves its golden file).

Any test that takes a `device` argument (directly or through the `check` fixture) runs once
per available device: ``tests/conftest.py`` parametrizes it, for every test directory.
"""

from __future__ import annotations

import pytest

import pyburn

from .helpers import OpChecker, golden_key


@pytest.fixture
def check(request: pytest.FixtureRequest, device) -> OpChecker:
    """An `OpChecker` for this test on `device`."""
    return OpChecker(device, golden_key(request.node))


@pytest.fixture
def other_device(device):
    """A device other than `device`; skips where only one is available."""
    others = [d for d in pyburn.available_devices() if d is not device]
    if not others:
        pytest.skip("needs a second available device")
    return others[0]
