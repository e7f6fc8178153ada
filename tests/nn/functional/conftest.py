"""The `ref` fixture: a `TorchChecker` for the test on the device under test."""

from __future__ import annotations

import pytest

from .helpers import TorchChecker


@pytest.fixture
def ref(request: pytest.FixtureRequest, device) -> TorchChecker:
    """Inputs seeded by the test's id without its device part (the same on every device),
    checked against PyTorch on `device`."""
    params = {k: v for k, v in request.node.callspec.params.items() if k != "device"}
    return TorchChecker(device, f"{request.node.originalname}{sorted(params.items())!r}")
