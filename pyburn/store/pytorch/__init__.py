"""Reading ``torch.save`` files without PyTorch and without ``pickle.load``.

- `pickle_reader`: the pickle virtual machine, with nothing callable outside an allow-list;
- `allowlist`: the globals a PyTorch pickle may name, and its storages' persistent IDs;
- `zip_format` / `legacy_format`: the two file layouts ``torch.save`` writes;
- `lazy`: storages and the strided tensor views over them, read when used;
- `store`: `load_pytorch` and `PytorchStore`, the lazy state dict of a file.

docs/store.md ("PyTorch files") describes what is read and what is refused.
"""

from __future__ import annotations

from .lazy import PytorchTensor, Storage
from .store import TOP_LEVEL_KEYS, PytorchStore, load_pytorch, read_object

__all__ = ["TOP_LEVEL_KEYS", "PytorchStore", "PytorchTensor", "Storage", "load_pytorch",
           "read_object"]
