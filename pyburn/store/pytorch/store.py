"""`PytorchStore` / `load_pytorch`: a ``torch.save`` file as a lazy state dict.

The saved object may be a state dict, or a checkpoint that holds one among other things
(``{"state_dict": ..., "optimizer": ..., "epoch": 3}``), with dicts, OrderedDicts, lists and
tuples nested in any way. Its tensors are listed under dotted names (``encoder.0.weight``,
``layers.2.bias``); everything else stays in `PytorchStore.tree`. When no top-level key is
given, a checkpoint's state dict is found by name: exactly one of `TOP_LEVEL_KEYS` holding
tensors is taken, several are an error that lists them, none means the whole file.
"""

from __future__ import annotations

from typing import Any

from ...devices import Device
from ...errors import ArgumentError, FormatError
from ..adapters import PyTorchAdapter
from ..header import brief
from ..lazy import LazyStateDict
from ..source import Source, open_source
from .lazy import PytorchTensor
from .legacy_format import read_legacy
from .zip_format import read_zip

#: top-level keys under which checkpoints commonly keep the model's state dict
TOP_LEVEL_KEYS = ("state_dict", "model_state_dict", "model", "model_state", "module", "net",
                  "network", "params", "weights")
#: the most containers and tensors one file's object may expand to when flattened (shared
#: containers nested in each other could otherwise expand exponentially)
MAX_ENTRIES = 1_000_000


def read_object(source: Source) -> tuple[Any, dict[str, Any]]:
    """The object a ``torch.save`` file holds, with tensors as lazy `PytorchTensor` views,
    and what the file says about itself (format, byte order, archive name)."""
    src = open_source(source)
    head = src.read_at(0, min(src.size, 262), "the file's first bytes")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return read_zip(src)
    if head[257:262] == b"ustar":
        raise FormatError("this is PyTorch's tar format (from before version 0.4), which "
                          "pyburn does not read; load and save it again with a recent PyTorch")
    if head[:1] == b"\x80":
        return read_legacy(src)
    if not head:
        raise FormatError("not a PyTorch file: it is empty")
    raise FormatError(f"not a PyTorch file: it starts with {head[:8]!r}, which is neither a "
                      f"zip archive nor a pickle")


def flatten(tree: Any) -> dict[str, PytorchTensor]:
    """Every tensor in `tree` under its dotted path, in the order a depth-first walk meets
    them. Keys that are neither strings nor small integers, and a container's second
    occurrence inside itself, contribute no names."""
    found: dict[str, PytorchTensor] = {}
    on_path: set[int] = set()
    todo: list[tuple[bool, Any, str]] = [(False, tree, "")]
    visits = 0
    while todo:
        leaving, value, name = todo.pop()
        if leaving:
            on_path.discard(id(value))
            continue
        visits += 1
        if visits > MAX_ENTRIES:
            raise FormatError(f"the saved object expands to more than {MAX_ENTRIES:,} entries "
                              f"(shared containers nested in each other?)")
        if isinstance(value, PytorchTensor):
            found.setdefault(name, value)
            continue
        if isinstance(value, dict):
            children = list(value.items())
        elif type(value) in (list, tuple):
            children = list(enumerate(value))
        else:
            continue
        if id(value) in on_path:
            continue
        on_path.add(id(value))
        todo.append((True, value, name))
        for key, child in reversed(children):
            part = key if isinstance(key, str) else (
                str(key) if type(key) is int and abs(key) < 10**18 else None)
            if part is not None:
                todo.append((False, child, f"{name}.{part}" if name else part))
    return found


def find_top_level_key(tree: Any, names: list[str]) -> str:
    """The top-level key whose tensors form the state dict ("" for the whole object), given
    the tree and the dotted names of all its tensors."""
    if not isinstance(tree, dict) or any(isinstance(v, PytorchTensor) for v in tree.values()):
        return ""
    heads = {name.split(".", 1)[0] for name in names}
    candidates = [k for k in TOP_LEVEL_KEYS if k in tree and k in heads]
    if len(candidates) > 1:
        raise ArgumentError(f"the file holds tensors under several top-level keys "
                            f"({', '.join(map(repr, candidates))}); pass top_level_key= to "
                            f"choose one (\"\" for the whole file)")
    return candidates[0] if candidates else ""


class PytorchStore(LazyStateDict):
    """The tensors of a ``torch.save`` file (zip or legacy format), read lazily, by name.

    `top_level_key` picks the state dict inside a checkpoint (None: found by name, see
    `TOP_LEVEL_KEYS`; "": the whole file). `device` is where `tensor` and `load` put
    tensors. The default adapter, `PyTorchAdapter`, fills in what older PyTorch versions
    did not save.
    """

    def __init__(self, source: Source, *, top_level_key: str | None = None,
                 device: Device | str | None = None):
        tree, metadata = read_object(source)
        tensors = flatten(tree)
        chosen = find_top_level_key(tree, list(tensors)) if top_level_key is None \
            else top_level_key
        super().__init__(tensors, metadata=metadata, adapter=PyTorchAdapter(), device=device)
        if chosen:
            self._tensors = self.with_top_level_key(chosen)._tensors
        #: the whole saved object, tensors as `PytorchTensor` (epochs, optimizer state, ...)
        self.tree = tree
        #: the top-level key the tensors come from ("" for the whole file)
        self.top_level_key = chosen
        self.metadata["top_level_key"] = chosen

    def __repr__(self) -> str:
        text = super().__repr__()
        where = f" under {brief(self.top_level_key)}" if self.top_level_key else ""
        return f"{text[:-1]}{where}; {self.metadata['format']})"


def load_pytorch(path: Source, *, top_level_key: str | None = None,
                 device: Device | str | None = None) -> PytorchStore:
    """The tensors of a file written by ``torch.save``, without importing torch and without
    ``pickle.load``: a `PytorchStore` (a lazy state dict; a tensor's bytes are read when it
    is used).

    `path` is a path, the file's contents, or a binary file object. Tensors saved on CUDA
    load on the CPU side like any other; bfloat16 loads as float32 (docs/store.md lists
    every conversion). A pickle that asks for anything but tensors, containers and a few
    torch types raises `pyburn.FormatError` naming it, and nothing in it runs.

    >>> import pyburn  # doctest: +SKIP
    >>> sd = pyburn.store.load_pytorch("resnet18.pth")  # doctest: +SKIP
    >>> sd["fc.weight"].shape, sd.tensor("fc.weight").dtype  # doctest: +SKIP
    ((1000, 512), pyburn.float32)
    """
    return PytorchStore(path, top_level_key=top_level_key, device=device)
