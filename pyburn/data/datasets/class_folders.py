"""Datasets of files sorted into one sub-folder per class (``root/cat/1.png``,
``root/dog/more/2.png``): the part `ImageFolder` and `TextFolder` share."""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from ...errors import ArgumentError
from ..dataset import Dataset, check_index
from .files import PathLike, existing_folder

T = TypeVar("T")


def extension_tuple(extensions: str | Iterable[str], what: str) -> tuple[str, ...]:
    """`extensions` (one, or several) as a tuple of lower-case suffixes starting with "."."""
    found = (extensions,) if isinstance(extensions, str) else tuple(extensions)
    if not found or not all(isinstance(e, str) and e.startswith(".") for e in found):
        raise ArgumentError(f"{what} extensions are suffixes starting with '.', such as "
                            f"'.png', got {extensions!r}")
    return tuple(e.lower() for e in found)


class ClassFolders(Dataset[tuple[T, int]]):
    """Item ``i`` is ``(load(paths[i]), targets[i])``.

    Every sub-folder of `root` is a class, its name the class name: `classes` lists them
    sorted by Python's ``sorted()`` (by Unicode code point: "B" comes before "a"), and a
    class's label is its index there (`class_to_index`). A class's files are those at any
    depth under its folder whose names end in one of `extensions` (in any case), sorted by
    their path relative to the class folder, compared folder by folder. Names starting with
    "." (hidden files and folders, macOS's ``._`` files) are left out, and so are the folders
    and files a subclass refuses in `is_class` and `is_item`. `paths` holds each item's file
    as `root` joined with the path under it (relative where `root` is); `targets` each item's
    label.
    """

    def __init__(self, root: PathLike, extensions: str | Iterable[str]):
        name = type(self).__name__
        self.root = existing_folder(root, name)
        suffixes = extension_tuple(extensions, name)
        self.classes: list[str] = sorted(entry.name for entry in os.scandir(self.root)
                                         if entry.is_dir() and self.is_class(entry.name))
        self.class_to_index: dict[str, int] = {c: i for i, c in enumerate(self.classes)}
        self.paths: list[Path] = []
        self.targets: list[int] = []
        for label, folder in enumerate(self.classes):
            top = self.root / folder
            found: list[Path] = []
            for where, folders, files in os.walk(top):
                folders[:] = [f for f in folders if not f.startswith(".")]
                found.extend(Path(where, f) for f in files
                             if not f.startswith(".") and f.lower().endswith(suffixes))
            found = sorted(filter(self.is_item, found),
                           key=lambda path: path.relative_to(top).parts)
            self.paths.extend(found)
            self.targets.extend([label] * len(found))
        if not self.paths:
            raise ArgumentError(f"{name}: no files ending in {', '.join(suffixes)} in the "
                                f"class folders of {self.root} (classes: {self.classes})")

    def is_class(self, name: str) -> bool:
        """Whether the sub-folder `name` of `root` is a class: every one whose name does not
        start with "."; a subclass may leave out more."""
        return not name.startswith(".")

    def is_item(self, path: Path) -> bool:
        """Whether the file at `path`, found in a class folder, is an item: every one is; a
        subclass may choose (`root` is set when this is asked)."""
        return True

    @abstractmethod
    def load(self, path: Path) -> T:
        """What item `path` holds; each subclass says how it is read."""

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[T, int]:
        i = check_index(index, len(self.paths), type(self).__name__)
        return self.load(self.paths[i]), self.targets[i]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({str(self.root)!r}, {len(self.paths)} files, "
                f"{len(self.classes)} classes)")
