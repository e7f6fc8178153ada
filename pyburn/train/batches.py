"""What `Learner` assumes about batches and loaders, in one place.

A batch is ``(inputs, targets)`` (a tuple or a list of two) or a dict with a "targets" entry.
Inputs that are a tuple or list are spread over the model's positional arguments; a dict
batch gives the model its "inputs" entry, or, without one, every entry but "targets" as
keyword arguments (``{"input_ids": ..., "attention_mask": ..., "targets": ...}``).

A loader is anything iterable. One with ``set_epoch``, ``state_dict`` and
``load_state_dict`` (`pyburn.data.DataLoader`) resumes mid-epoch from its own cursor; any
other is resumed by skipping the batches already done, which gives the same batches only if
iterating it again gives the same sequence.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .._tensor import Tensor
from ..errors import ArgumentError

TARGETS = "targets"
INPUTS = "inputs"


def split_batch(batch: Any) -> tuple[Any, Any]:
    """(inputs, targets) of a batch (see the module's docstring)."""
    if isinstance(batch, Mapping):
        if TARGETS not in batch:
            raise ArgumentError(f"a dict batch needs a {TARGETS!r} entry; it has "
                                f"{sorted(map(str, batch))}")
        if INPUTS in batch:
            return batch[INPUTS], batch[TARGETS]
        return {k: v for k, v in batch.items() if k != TARGETS}, batch[TARGETS]
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    raise ArgumentError(f"a batch is (inputs, targets) or a dict with {TARGETS!r}, got "
                        f"{type(batch).__name__}" + (f" of length {len(batch)}"
                                                     if isinstance(batch, (tuple, list)) else ""))


def call_model(model: Any, inputs: Any) -> Any:
    """``model(inputs)``; a tuple or list of inputs is spread over positional arguments, a
    dict over keyword arguments."""
    if isinstance(inputs, Mapping):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def count_items(targets: Any) -> int:
    """How many items a batch holds: the first dimension of the first tensor among its
    targets (a list's length when there is no tensor)."""
    found = first_tensor(targets)
    if found is not None:
        return found.shape[0] if found.ndim else 1
    return len(targets) if isinstance(targets, (list, tuple)) else 1


def first_tensor(value: Any) -> Tensor | None:
    """The first tensor found in `value`, depth first through tuples, lists and dicts."""
    if isinstance(value, Tensor):
        return value
    children = value.values() if isinstance(value, Mapping) else (
        value if isinstance(value, (tuple, list)) else ())
    for child in children:
        found = first_tensor(child)
        if found is not None:
            return found
    return None


def detach(value: Any) -> Any:
    """`value` with every tensor in it cut from the graph."""
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, Mapping):
        return {k: detach(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(detach(v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(detach(v) for v in value)
    return value


def loader_length(loader: Iterable[Any]) -> int | None:
    """Batches per epoch, when the loader knows."""
    try:
        return len(loader)  # type: ignore[arg-type]
    except TypeError:
        return None


def has_cursor(loader: Any) -> bool:
    """Whether the loader saves and restores its own position (`pyburn.data.DataLoader`)."""
    return all(callable(getattr(loader, name, None))
               for name in ("set_epoch", "state_dict", "load_state_dict"))


def start_epoch(loader: Any, epoch: int) -> None:
    """Point a loader that has epochs at the first batch of `epoch` (0-based)."""
    set_epoch = getattr(loader, "set_epoch", None)
    if callable(set_epoch):
        set_epoch(epoch)


def batches_from(loader: Iterable[Any], position: int) -> Iterator[Any]:
    """The loader's batches from batch `position` of the current epoch on: a loader with
    a cursor is already there; any other skips the first `position` batches."""
    if position and not has_cursor(loader):
        return itertools.islice(iter(loader), position, None)
    return iter(loader)
