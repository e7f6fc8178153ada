"""Datasets: anything with ``len(ds)`` and ``ds[i]``, and the wrappers that compose them.

A dataset is random access, like a list: the loader asks for items (or whole batches, see
`BatchedDataset`) by index. Wrappers never copy the items of the dataset they wrap; they map
indices. Indices are ints; a negative one counts from the end, as for lists; one out of range
raises `IndexOutOfRange` (an `IndexError`, so ``for item in ds`` and ``list(ds)`` work).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import ArgumentError, IndexOutOfRange
from .shuffle import permutation

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
U = TypeVar("U")


@runtime_checkable
class Dataset(Protocol[T_co]):
    """What the loader needs from a dataset: its length and its items by index.

    A list is a dataset; so is any class with these two methods.
    """

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> T_co: ...


@runtime_checkable
class BatchedDataset(Dataset[T_co], Protocol):
    """A dataset that also makes a whole batch in one call, e.g. by one `index_select` on
    tensors that hold every item. `DataLoader` uses `get_batch` instead of fetching items one by
    one and collating them (unless it is given its own `collate`)."""

    def get_batch(self, indices: Sequence[int]) -> Any: ...


def check_index(index: Any, length: int, what: str) -> int:
    """`index` as an int in ``[0, length)``; negative counts from the end. Raises
    `ArgumentError` for a non-integer and `IndexOutOfRange` for one out of range."""
    if isinstance(index, bool) or not hasattr(type(index), "__index__"):
        raise ArgumentError(f"{what} is indexed by an int, got {type(index).__name__}")
    i = operator.index(index)
    if not -length <= i < length:
        raise IndexOutOfRange(f"index {i} is out of range for {what} of length {length}")
    return i + length if i < 0 else i


def check_int(what: str, value: Any, low: int) -> int:
    """`value`, an int >= `low`; `ArgumentError` naming `what` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ArgumentError(f"{what} must be an int >= {low}, got {value!r}")
    return value


def _check_dataset(dataset: Any, what: str) -> None:
    if not isinstance(dataset, Dataset):
        raise ArgumentError(f"{what} needs a dataset (with __len__ and __getitem__), got "
                            f"{type(dataset).__name__}")


class InMemoryDataset(Dataset[T]):
    """The items of an iterable, held in a list.

    >>> ds = InMemoryDataset(range(3))
    >>> len(ds), ds[-1]
    (3, 2)
    """

    def __init__(self, items: Iterable[T]):
        self.items: list[T] = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[check_index(index, len(self.items), "InMemoryDataset")]

    def __repr__(self) -> str:
        return f"InMemoryDataset(<{len(self.items)} items>)"


class MapDataset(Dataset[U]):
    """`fn(item)` for each item of `dataset`, computed when the item is asked for.

    >>> MapDataset([1, 2, 3], lambda x: x * 10)[1]
    20
    """

    def __init__(self, dataset: Dataset[T], fn: Callable[[T], U]):
        _check_dataset(dataset, "MapDataset")
        if not callable(fn):
            raise ArgumentError(f"MapDataset needs a callable, got {type(fn).__name__}")
        self.dataset = dataset
        self.fn = fn

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> U:
        return self.fn(self.dataset[check_index(index, len(self), "MapDataset")])

    def __repr__(self) -> str:
        return f"MapDataset({self.dataset!r}, {getattr(self.fn, '__name__', self.fn)!r})"


class _IndexView(Dataset[T]):
    """A dataset whose item ``i`` is item ``source_index(i)`` of another: shared by the
    wrappers that only reorder or restrict. It keeps the fast batch path of the dataset it
    wraps: `get_batch` exists exactly when the wrapped dataset has one."""

    def __init__(self, dataset: Dataset[T]):
        self.dataset = dataset

    def source_index(self, index: int) -> int:
        """The index in the wrapped dataset of this view's item `index` (already checked)."""
        raise NotImplementedError

    def __getitem__(self, index: int) -> T:
        return self.dataset[self.source_index(check_index(index, len(self),
                                                          type(self).__name__))]

    @property
    def get_batch(self) -> Callable[[Sequence[int]], Any]:
        """The wrapped dataset's `get_batch` on the mapped indices; an AttributeError (so
        ``hasattr`` is False) when the wrapped dataset has none."""
        inner = getattr(self.dataset, "get_batch", None)
        if inner is None:
            raise AttributeError(f"{type(self.dataset).__name__} has no get_batch")
        n, name = len(self), type(self).__name__

        def get_batch(indices: Sequence[int]) -> Any:
            return inner([self.source_index(check_index(i, n, name)) for i in indices])

        return get_batch


class ShuffledDataset(_IndexView[T]):
    """The items of `dataset` in a fixed random order: the permutation that
    `pyburn.data.permutation(len(dataset), seed)` gives (Philox-4x32-10 words from
    `pyburn.random`, the same on every platform and Python version).

    >>> ShuffledDataset(range(5), seed=0)[0] in range(5)
    True
    """

    def __init__(self, dataset: Dataset[T], seed: int):
        _check_dataset(dataset, "ShuffledDataset")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ArgumentError(f"ShuffledDataset needs an int seed, got {seed!r}")
        super().__init__(dataset)
        self.seed = seed
        self.order = permutation(len(dataset), seed)

    def __len__(self) -> int:
        return len(self.order)

    def source_index(self, index: int) -> int:
        """Where item `index` of the shuffled order sits in the wrapped dataset."""
        return self.order[index]

    def __repr__(self) -> str:
        return f"ShuffledDataset({self.dataset!r}, seed={self.seed})"


class PartialDataset(_IndexView[T]):
    """Items ``start`` to ``end`` (exclusive) of `dataset`; `end=None` means to the end.
    A split into training and validation sets is two of these.

    >>> list(PartialDataset(range(10), 2, 5))
    [2, 3, 4]
    """

    def __init__(self, dataset: Dataset[T], start: int, end: int | None = None):
        _check_dataset(dataset, "PartialDataset")
        n = len(dataset)
        end = n if end is None else end
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentError(f"PartialDataset {name} must be an int, got {value!r}")
        if not 0 <= start <= end <= n:
            raise ArgumentError(f"PartialDataset needs 0 <= start <= end <= {n} (the length "
                                f"of the dataset), got start={start}, end={end}")
        super().__init__(dataset)
        self.start, self.end = start, end

    def __len__(self) -> int:
        return self.end - self.start

    def source_index(self, index: int) -> int:
        """Item `index` of the part is item ``start + index`` of the whole."""
        return self.start + index

    def __repr__(self) -> str:
        return f"PartialDataset({self.dataset!r}, {self.start}, {self.end})"


class SelectionDataset(_IndexView[T]):
    """The items of `dataset` at `indices`, in that order (an index may repeat; a negative one
    counts from the end). Indices are checked here, once.

    >>> list(SelectionDataset("abcde", [4, 0, -2]))
    ['e', 'a', 'd']
    """

    def __init__(self, dataset: Dataset[T], indices: Iterable[int]):
        _check_dataset(dataset, "SelectionDataset")
        super().__init__(dataset)
        n = len(dataset)
        self.indices = [check_index(i, n, "SelectionDataset's dataset") for i in indices]

    def __len__(self) -> int:
        return len(self.indices)

    def source_index(self, index: int) -> int:
        """Item `index` of the selection is item ``indices[index]`` of the whole."""
        return self.indices[index]

    def __repr__(self) -> str:
        return f"SelectionDataset({self.dataset!r}, <{len(self.indices)} indices>)"


class ConcatDataset(Dataset[T]):
    """The items of several datasets, one after the other.

    >>> ds = ConcatDataset([[1, 2], [3]])
    >>> len(ds), ds[2]
    (3, 3)
    """

    def __init__(self, datasets: Iterable[Dataset[T]]):
        self.datasets = list(datasets)
        for i, ds in enumerate(self.datasets):
            _check_dataset(ds, f"ConcatDataset (part {i})")
        self.ends: list[int] = []  # ends[k]: index one past the last item of part k
        total = 0
        for ds in self.datasets:
            total += len(ds)
            self.ends.append(total)

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getitem__(self, index: int) -> T:
        i = check_index(index, len(self), "ConcatDataset")
        part = bisect.bisect_right(self.ends, i)
        return self.datasets[part][i - (self.ends[part - 1] if part else 0)]

    def __repr__(self) -> str:
        return f"ConcatDataset({self.datasets!r})"


class WindowDataset(Dataset[tuple]):
    """Sliding windows: item ``i`` is the tuple of items ``i .. i + size - 1`` of `dataset`,
    so there are ``len(dataset) - size + 1`` of them (none when the dataset is shorter).
    Wrap it in a `MapDataset` with ``pyburn.stack`` to get one tensor per window.

    >>> list(WindowDataset([1, 2, 3, 4], 3))
    [(1, 2, 3), (2, 3, 4)]
    """

    def __init__(self, dataset: Dataset[T], size: int):
        _check_dataset(dataset, "WindowDataset")
        self.dataset = dataset
        self.size = check_int("WindowDataset size", size, 1)

    def __len__(self) -> int:
        return max(0, len(self.dataset) - self.size + 1)

    def __getitem__(self, index: int) -> tuple:
        i = check_index(index, len(self), "WindowDataset")
        return tuple(self.dataset[j] for j in range(i, i + self.size))

    def __repr__(self) -> str:
        return f"WindowDataset({self.dataset!r}, {self.size})"
