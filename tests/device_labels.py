"""How a device appears in test ids: its name, except a remote device, whose address changes
from run to run (a free port): "remote-cpu" for one serving cpu."""

from __future__ import annotations

import pyburn


def label(device: pyburn.Device) -> str:
    """The device's part of a test id: the same on every run and every worker."""
    if device.address:
        return f"{device.kind}-{device.backend.served}"
    return device.name
