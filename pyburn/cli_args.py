"""argparse value types that several ``pyburn`` subcommands share."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An int of at least 1, or argparse's error naming the value."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
