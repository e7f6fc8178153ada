"""Turning a list of items into one batch, and moving a batch to a device.

`default_collate` follows the structure of the first item, as PyTorch's does: tensors are
stacked along a new first dim, numbers become a 1-d tensor, tuples, lists and dicts are
collated field by field, strings stay a list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._tensor import Tensor
from ..devices import Device
from ..errors import ArgumentError, ShapeError
from ..ops.creation import from_numpy, tensor
from ..ops.movement import stack

DeviceLike = Device | str | None


def default_collate(items: Sequence[Any], device: DeviceLike = None) -> Any:
    """One batch from `items` of the same structure:

    - tensors of one shape → their stack, shape ``(len(items), *shape)``;
    - numbers → a 1-d tensor (bools give bool, ints int32, floats float32, as
      `pyburn.tensor` infers);
    - numpy arrays or scalars → a tensor of their stack (same dtype);
    - tuples (named tuples too), lists, dicts → the same container of collated fields;
    - strings → the list of them.

    New tensors are made on `device` (None: the default device); stacked tensors stay where
    they are unless `device` is given.

    >>> b = default_collate([(1, 0.5), (2, 1.5)], device="flex")
    >>> [t.tolist() for t in b]
    [[1, 2], [0.5, 1.5]]
    """
    if not items:
        raise ArgumentError("cannot collate an empty list of items")
    return _collate(list(items), device, "item")


def _collate(items: list[Any], device: DeviceLike, where: str) -> Any:
    first = items[0]
    if isinstance(first, Tensor):
        _same_kind(items, Tensor, where)
        shapes = {x.shape for x in items}
        if len(shapes) > 1:
            raise ShapeError(f"cannot collate tensors of different shapes at {where}: "
                             f"{sorted(shapes)}")
        batch = stack(items)
        return batch if device is None else batch.to(device)
    if isinstance(first, str):
        _same_kind(items, str, where)
        return items
    # before numbers: numpy.float64 is a float, and should keep its dtype
    if hasattr(first, "__array_interface__"):
        import numpy  # optional: numpy (the items are arrays, so it is there)

        arrays = [numpy.asarray(x) for x in items]
        shapes = {a.shape for a in arrays}
        if len(shapes) > 1:
            raise ShapeError(f"cannot collate arrays of different shapes at {where}: "
                             f"{sorted(shapes)}")
        return from_numpy(numpy.stack(arrays), device=device)
    if isinstance(first, (bool, int, float)):
        _same_kind(items, (bool, int, float), where)
        return tensor(items, device=device)
    if isinstance(first, Mapping):
        _same_kind(items, Mapping, where)
        keys = list(first)
        for i, item in enumerate(items):
            if set(item) != set(keys):
                raise ArgumentError(f"cannot collate dicts with different keys at {where}: "
                                    f"item 0 has {sorted(map(str, keys))}, item {i} has "
                                    f"{sorted(map(str, item))}")
        return {k: _collate([x[k] for x in items], device, f"{where}[{k!r}]") for k in keys}
    if isinstance(first, (tuple, list)):
        _same_kind(items, (tuple, list), where)
        for i, item in enumerate(items):
            if len(item) != len(first):
                raise ArgumentError(f"cannot collate sequences of different lengths at "
                                    f"{where}: item 0 has {len(first)}, item {i} has {len(item)}")
        fields = [_collate([x[j] for x in items], device, f"{where}[{j}]")
                  for j in range(len(first))]
        if isinstance(first, list):
            return fields
        return type(first)(*fields) if hasattr(first, "_fields") else tuple(fields)
    raise ArgumentError(f"default_collate cannot batch a {type(first).__name__} at {where}: "
                        "it takes tensors, numbers, numpy arrays, strings and tuples, lists "
                        "or dicts of those (pass collate= for anything else)")


def _same_kind(items: list[Any], kind: type | tuple[type, ...], where: str) -> None:
    for i, x in enumerate(items):
        if not isinstance(x, kind):
            raise ArgumentError(f"cannot collate at {where}: item 0 is a "
                                f"{type(items[0]).__name__}, item {i} is a {type(x).__name__}")


def to_device(batch: Any, device: DeviceLike) -> Any:
    """`batch` with every tensor in it (inside tuples, lists and dicts too) moved to
    `device`; None leaves it as it is."""
    if device is None:
        return batch
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, Mapping):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch
