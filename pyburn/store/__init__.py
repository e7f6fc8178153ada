"""Saving and loading tensors: safetensors is pyburn's native format.

- `save` / `load` / `load_metadata`: a module's weights (or any dict of name -> Tensor) as a
  safetensors file that any safetensors reader opens, and any safetensors file as tensors;
- `save_checkpoint` / `load_checkpoint`: model, optimizer, scheduler, counters and random
  state in one file, restored with ``Checkpoint.restore``;
- `atomic_write`: how every file is written (temp file, fsync, rename);
- `load_pytorch` / `PytorchStore`, `SafetensorsStore`, `open_store`: files as lazy state dicts
  (`LazyStateDict`: name -> `LazyTensor`, read when used), which ``Module.load_from`` applies
  with key remapping, filters and adapters (`PyTorchAdapter`, `HalfPrecision`).

Standard library only, so it works under Pyodide. docs/store.md describes the format, the
dtype conversions and the checkpoint layout.
"""

from __future__ import annotations

from .adapters import Adapter, Chain, Entry, HalfPrecision, PyTorchAdapter
from .apply import ApplyResult
from .atomic import atomic_write
from .checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from .header import Header, TensorInfo
from .lazy import LazyStateDict, LazyTensor
from .pytorch import PytorchStore, load_pytorch
from .stores import SafetensorsStore, open_store
from .weights import load, load_metadata, read_header, save

__all__ = ["Adapter", "ApplyResult", "Chain", "Checkpoint", "Entry", "HalfPrecision", "Header",
           "LazyStateDict", "LazyTensor", "PyTorchAdapter", "PytorchStore", "SafetensorsStore",
           "TensorInfo", "atomic_write", "load", "load_checkpoint", "load_metadata",
           "load_pytorch", "open_store", "read_header", "save", "save_checkpoint"]
