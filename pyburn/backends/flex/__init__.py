"""flex: the pure-Python backend (standard library only), available everywhere.

Found by file name: ``pyburn.device("flex")`` calls `unavailable_reason` and `create`.
"""

from __future__ import annotations

from .backend import FlexBackend


def unavailable_reason() -> str | None:
    """Why flex cannot run here: never, it needs only the standard library."""
    return None


def create(index: int) -> FlexBackend:
    """A flex backend instance (every index is an independent, identical CPU device)."""
    return FlexBackend()


__all__ = ["FlexBackend", "create", "unavailable_reason"]
