"""The conformance suite's fixtures and its golden file.

Any test that takes a `device` argument (directly or through the `check` fixture) runs once
per available device: ``tests/conftest.py`` parametrizes it, for every test directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from device_labels import label

import pyburn

from .helpers import GOLDEN, OpChecker


def golden_key(node: pytest.Item) -> str:
    """The test's id without its device part: the same on every device and platform."""
    callspec = node.callspec
    name = label(callspec.params["device"])
    rest = callspec.id[len(name):]
    assert callspec.id.startswith(name) and rest[:1] in ("", "-"), (
        f"the device id must come first in {callspec.id!r}")
    params = rest[1:]
    return f"{Path(str(node.path)).name}::{node.originalname}" + (f"[{params}]" if params else "")


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Merge the references this run computed into build/conformance-golden.json."""
    GOLDEN.save()
