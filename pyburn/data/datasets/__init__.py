"""Ready-made datasets and the file formats they come in.

>>> from pyburn.data.datasets import MNIST, read_idx
"""

from __future__ import annotations

from .idx import IDX_TYPES, IdxArray, IdxType, parse_idx, read_idx
from .mnist import MNIST, DatasetUnavailableError, FashionMNIST, IdxImageDataset, data_root
from .npm import NpmUnavailable, fetch_npm_files

__all__ = ["IDX_TYPES", "MNIST", "DatasetUnavailableError", "FashionMNIST", "IdxArray",
           "IdxImageDataset", "IdxType", "NpmUnavailable", "data_root", "fetch_npm_files",
           "parse_idx", "read_idx"]
