"""The lazy numpy import shared by every part of pyburn that can use numpy."""

from __future__ import annotations

from typing import Any

from .errors import MissingExtraError


def require_numpy() -> Any:
    """The numpy module, or a MissingExtraError that says how to install it."""
    try:
        import numpy  # optional: numpy
    except ImportError:
        raise MissingExtraError("this needs numpy, which is not installed: "
                                "pip install 'pyburn[numpy]'") from None
    return numpy
