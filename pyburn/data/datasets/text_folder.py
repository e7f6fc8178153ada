"""`TextFolder`: text classification from one sub-folder of text files per class."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .class_folders import ClassFolders
from .files import PathLike, read_text


class TextFolder(ClassFolders[str]):
    """Item ``i`` is ``(text, label)``: the ``i``-th file's text, decoded as UTF-8 (a leading
    byte-order mark dropped, line endings as in the file) when the item is asked for, and its
    class's index. Classes, file order, `paths` and `targets` are as `ClassFolders` says:
    ``root/<class>/**/*.txt``, sorted.

        ds = TextFolder("reviews/train")          # reviews/train/neg/*.txt, .../pos/*.txt
        ds.classes, ds[0]                         # (['neg', 'pos'], ('Dull.', 0))
    """

    def __init__(self, root: PathLike, extensions: str | Iterable[str] = (".txt",)):
        super().__init__(root, extensions)

    def load(self, path: Path) -> str:
        """The text of the file at `path`."""
        return read_text(path, "TextFolder")
