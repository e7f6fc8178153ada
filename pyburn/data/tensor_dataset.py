"""`TensorDataset`: items are rows of tensors that hold the whole dataset; a batch is one
`index_select` per tensor, with no Python work per item."""

from __future__ import annotations

from collections.abc import Sequence

from .._tensor import Tensor
from ..dtypes import int32
from ..errors import ArgumentError, ShapeError
from ..ops.creation import tensor
from ..ops.indexing import index_select
from .dataset import Dataset, check_index


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Item ``i`` is ``(t[i] for t in tensors)``; the tensors share their first dim.

    `DataLoader` batches it through `get_batch`: for MNIST's 60,000 images that is one
    ``index_select`` per batch on the (60000, 28, 28) tensor, on whatever device holds it.

    >>> import pyburn
    >>> ds = TensorDataset(pyburn.arange(6, device="flex").reshape(3, 2),
    ...                    pyburn.tensor([0, 1, 0], device="flex"))
    >>> [t.tolist() for t in ds.get_batch([2, 0])]
    [[[4, 5], [0, 1]], [0, 0]]
    """

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ArgumentError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise ArgumentError(f"TensorDataset argument {i} is a {type(t).__name__}, "
                                    "not a pyburn.Tensor")
            if t.ndim == 0:
                raise ShapeError(f"TensorDataset argument {i} is 0-d: items are taken along "
                                 "the first dim")
            if t.shape[0] != tensors[0].shape[0]:
                raise ShapeError(f"TensorDataset tensors differ in their first dim: argument 0 "
                                 f"has shape {tensors[0].shape}, argument {i} {t.shape}")
        self.tensors = tensors

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        i = check_index(index, len(self), "TensorDataset")
        return tuple(t[i] for t in self.tensors)

    def get_batch(self, indices: Sequence[int]) -> tuple[Tensor, ...]:
        """The items at `indices` stacked: ``index_select(t, 0, indices)`` for each tensor
        (which checks the indices: a negative one counts from the end)."""
        checked = list(indices)
        index_on: dict[object, Tensor] = {}  # one index tensor per device
        out = []
        for t in self.tensors:
            if t.device not in index_on:
                index_on[t.device] = tensor(checked, dtype=int32, device=t.device)
            out.append(index_select(t, 0, index_on[t.device]))
        return tuple(out)

    def __repr__(self) -> str:
        shapes = ", ".join(str(t.shape) for t in self.tensors)
        return f"TensorDataset({shapes})"
