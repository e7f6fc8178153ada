"""flex: the pure-Python backend (standard library only), available everywhere.

Registered by `REGISTRATION`: last in the default order, after every faster backend.
"""

from __future__ import annotations

from ..base import Registration
from .backend import FlexBackend

#: the default-device rank (lower first): after cpu and any wgpu adapter
RANK = 40


def unavailable_reason() -> str | None:
    """Why flex cannot run here: never, it needs only the standard library."""
    return None


def create(index: int) -> FlexBackend:
    """A flex backend instance (every index is an independent, identical CPU device)."""
    return FlexBackend()


REGISTRATION = Registration("flex", unavailable_reason, create, RANK)

__all__ = ["REGISTRATION", "FlexBackend", "create", "unavailable_reason"]
