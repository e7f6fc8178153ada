"""The `ref` fixture: a `TorchChecker` for the test on the device under test."""

from __future__ import annotations

import pytest
from conformance.helpers import golden_key

from .helpers import TorchChecker


@pytest.fixture
def ref(request: pytest.FixtureRequest, device) -> TorchChecker:
    """Inputs seeded by the test's id without its device part (the same on every device and
    platform), checked against PyTorch (or its recorded results) on `device`."""
    return TorchChecker(device, golden_key(request.node))
