"""Feeding data to models: datasets, the wrappers that compose them, and `DataLoader`.

The core is pure Python (it runs under Pyodide with no numpy and no threads); numpy is used
for speed where it is installed, with the same results.

>>> from pyburn.data import DataLoader, InMemoryDataset, MapDataset
>>> loader = DataLoader(MapDataset(InMemoryDataset(range(4)), float), batch_size=2,
...                     device="flex")
>>> [b.tolist() for b in loader]
[[0.0, 1.0], [2.0, 3.0]]
"""

from __future__ import annotations

import importlib
from typing import Any

from .collate import default_collate, to_device
from .dataframe import DataFrameDataset
from .dataset import (
    BatchedDataset,
    ConcatDataset,
    Dataset,
    InMemoryDataset,
    MapDataset,
    PartialDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowDataset,
    check_index,
)
from .fake import FakeDataset
from .loader import DataLoader
from .sampler import (
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .shapes import ShapesDataset
from .shuffle import permutation
from .tensor_dataset import TensorDataset


def __getattr__(name: str) -> Any:
    """`pyburn.data.datasets` is imported on first use: it is not needed to train on data
    already in memory, and it costs most of this package's import time."""
    if name == "datasets":
        return importlib.import_module(".datasets", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BatchedDataset", "ConcatDataset", "DataFrameDataset", "DataLoader", "Dataset",
           "DistributedSampler", "FakeDataset", "InMemoryDataset", "MapDataset",
           "PartialDataset", "RandomSampler", "Sampler", "SelectionDataset",
           "SequentialSampler", "ShapesDataset", "ShuffledDataset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "WindowDataset", "check_index", "datasets",
           "default_collate", "permutation", "to_device"]
