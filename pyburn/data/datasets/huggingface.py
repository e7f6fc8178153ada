"""Hugging Face ``datasets`` as pyburn datasets, and their import into SQLite.

Nothing here imports ``datasets``: a Hugging Face `Dataset` (the random-access kind, as
``load_dataset(...)["train"]`` or ``Dataset.from_dict`` give) is used through its length,
its ``[i]`` and its ``features``, so any object with those works too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ArgumentError
from ..dataset import Dataset, check_index
from .files import PathLike
from .sqlite import write_sqlite


class HuggingFaceDataset(Dataset[Any]):
    """Item ``i`` is ``dataset[i]``, as ``datasets`` gives it: a dict of the row's columns
    (an ``Image`` column as a PIL image, a ``Sequence`` as a list, ...); wrap it in a
    `MapDataset` to make tensors of them. Indices follow pyburn's rules (negative ones from
    the end, `IndexOutOfRange` past it); `features` is the dataset's own."""

    def __init__(self, dataset: Any):
        if isinstance(dataset, Mapping):  # a DatasetDict: one dataset per split
            raise ArgumentError(f"from_huggingface takes one split, such as dataset['train'] "
                                f"(this holds {list(dataset)})")
        if not isinstance(dataset, Dataset) or not hasattr(dataset, "features"):
            raise ArgumentError(f"from_huggingface takes a datasets.Dataset (with len, [i] and "
                                f"features), got {type(dataset).__name__}; an "
                                "IterableDataset has no random access")
        self.dataset = dataset

    @property
    def features(self) -> Any:
        """The column types, as ``datasets`` describes them."""
        return self.dataset.features

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[check_index(index, len(self.dataset), "HuggingFaceDataset")]

    def __repr__(self) -> str:
        return f"HuggingFaceDataset(<{len(self)} rows: {', '.join(self.features)}>)"


def from_huggingface(dataset: Any) -> HuggingFaceDataset:
    """A Hugging Face ``datasets.Dataset`` as a pyburn dataset (see `HuggingFaceDataset`).

        from datasets import load_dataset
        train = from_huggingface(load_dataset("imdb")["train"])
    """
    return HuggingFaceDataset(dataset)


def huggingface_to_sqlite(dataset: Any, path: PathLike, table: str = "items", *,
                          overwrite: bool = False) -> int:
    """Write the rows of a Hugging Face ``datasets.Dataset`` to `table` of the SQLite file at
    `path` with `write_sqlite` (lists and dicts become JSON columns; a value neither SQLite
    nor JSON holds, such as an image, raises `ArgumentError`); the number of rows. Read
    them back with `SqliteDataset`, with no need for ``datasets``."""
    rows = from_huggingface(dataset)
    return write_sqlite(path, (rows[i] for i in range(len(rows))), table, overwrite=overwrite)
