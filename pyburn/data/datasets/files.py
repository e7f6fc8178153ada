"""What the datasets read from files the user names have in common: a path that must be a
file or a folder, and text decoded as UTF-8. Each error names the path."""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import ArgumentError, FormatError

PathLike = str | os.PathLike[str]


def existing_file(path: PathLike, what: str) -> Path:
    """`path` as a `Path`, or `ArgumentError` saying that `what` found no file there."""
    found = Path(path)
    if not found.is_file():
        kind = "a folder, not a file" if found.is_dir() else "no such file"
        raise ArgumentError(f"{what}: {found} is {kind}")
    return found


def existing_folder(path: PathLike, what: str) -> Path:
    """`path` as a `Path`, or `ArgumentError` saying that `what` found no folder there."""
    found = Path(path)
    if not found.is_dir():
        kind = "a file, not a folder" if found.exists() else "no such folder"
        raise ArgumentError(f"{what}: {found} is {kind}")
    return found


def read_text(path: PathLike, what: str) -> str:
    """The text of the file at `path`, decoded as UTF-8 (a leading byte-order mark dropped,
    line endings kept as they are); `FormatError` for bytes that are not UTF-8."""
    data = existing_file(path, what).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FormatError(f"{what}: {path} is not UTF-8 text (byte {error.start}: "
                          f"{error.reason})") from None
