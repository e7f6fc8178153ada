"""Saving and loading tensors: safetensors is pyburn's native format.

- `save` / `load` / `load_metadata`: a module's weights (or any dict of name -> Tensor) as a
  safetensors file that any safetensors reader opens, and any safetensors file as tensors;
- `save_checkpoint` / `load_checkpoint`: model, optimizer, scheduler, counters and random
  state in one file, restored with ``Checkpoint.restore``;
- `atomic_write`: how every file is written (temp file, fsync, rename).

Standard library only, so it works under Pyodide. docs/store.md describes the format, the
dtype conversions and the checkpoint layout.
"""

from __future__ import annotations

from .atomic import atomic_write
from .checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from .header import Header, TensorInfo
from .weights import load, load_metadata, read_header, save

__all__ = ["Checkpoint", "Header", "TensorInfo", "atomic_write", "load", "load_checkpoint",
           "load_metadata", "read_header", "save", "save_checkpoint"]
