"""TextFolder against the files' own bytes, decoded."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.data.datasets import TextFolder


def test_texts_labels_and_order(tmp_path):
    files = {"pos/b.txt": "Great.\r\nLoved it", "pos/a/1.txt": "\ufeffBOM first",
             "neg/z.TXT": "Dull ✗", "neg/skip.md": "# not text", "Neu/.x.txt": "hidden"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    ds = TextFolder(tmp_path)
    assert ds.classes == ["Neu", "neg", "pos"]
    assert ds.paths == [tmp_path / "neg/z.TXT", tmp_path / "pos/a/1.txt", tmp_path / "pos/b.txt"]
    assert ds.targets == [1, 2, 2]
    assert list(ds) == [("Dull ✗", 1), ("BOM first", 2), ("Great.\r\nLoved it", 2)]
    assert TextFolder(tmp_path, extensions=(".md",))[0] == ("# not text", 1)
    with pytest.raises(pyburn.IndexOutOfRange, match="length 3"):
        ds[3]
    (tmp_path / "neg/z.TXT").write_bytes(b"caf\xe9")
    with pytest.raises(pyburn.FormatError, match=r"z\.TXT is not UTF-8 text"):
        ds[0]
