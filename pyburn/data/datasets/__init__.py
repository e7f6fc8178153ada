"""Ready-made datasets and the file formats they come in.

>>> from pyburn.data.datasets import MNIST, read_idx
"""

from __future__ import annotations

from .ag_news import AGNews
from .cifar import CIFAR10
from .coco import CocoDetection
from .huggingface import HuggingFaceDataset, from_huggingface, huggingface_to_sqlite
from .idx import IDX_TYPES, IdxArray, IdxType, parse_idx, read_idx
from .image_folder import ImageFolder, MultiLabelImages, SegmentationFolder, load_image
from .mnist import MNIST, DatasetUnavailableError, FashionMNIST, IdxImageDataset, data_root
from .npm import NpmUnavailable, fetch_npm_files
from .speech_commands import SpeechCommands
from .sqlite import SqliteDataset, SqliteWriter, write_sqlite
from .tabular import CsvDataset, JsonlDataset
from .text_folder import TextFolder

__all__ = ["CIFAR10", "IDX_TYPES", "MNIST", "AGNews", "CocoDetection", "CsvDataset",
           "DatasetUnavailableError", "FashionMNIST", "HuggingFaceDataset", "IdxArray",
           "IdxImageDataset", "IdxType", "ImageFolder", "JsonlDataset", "MultiLabelImages",
           "NpmUnavailable", "SegmentationFolder", "SpeechCommands", "SqliteDataset",
           "SqliteWriter", "TextFolder", "data_root", "fetch_npm_files", "from_huggingface",
           "huggingface_to_sqlite", "load_image", "parse_idx", "read_idx", "write_sqlite"]
