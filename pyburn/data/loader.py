"""`DataLoader`: batches of a dataset, epoch after epoch, resumable mid-epoch.

The loader is a cursor ``(epoch, position)``: iterating it yields the batches of `epoch` from
batch `position` on, advancing `position` as each batch is handed out, and moves to the next
epoch (position 0) when the epoch's batches are exhausted. ``state_dict()`` saves the cursor and
``load_state_dict()`` puts it back, so a run resumed from a checkpoint sees exactly the batches
it had not seen yet. The order of each epoch comes from a sampler (`pyburn.data.sampler`): the
one given, or `RandomSampler` (``permutation(n, seed, epoch)``: a new order each epoch, the same
on every machine) when shuffling, `SequentialSampler` otherwise.

``async for batch in loader`` is the same iteration for an event loop that must keep running,
as in a browser under Pyodide, where threads cannot do the work in the background.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Generator
from typing import Any

from ..errors import ArgumentError
from .collate import DeviceLike, default_collate, to_device
from .dataset import Dataset, check_int
from .prefetch import prefetch, threads_available
from .sampler import RandomSampler, Sampler, SequentialSampler
from .shuffle import check_seed


def _check_int(name: str, value: Any, low: int) -> int:
    return check_int(f"DataLoader {name}", value, low)


def _describe_sampler(length: int | None) -> str:
    return "no sampler" if length is None else f"a sampler of {length} indices"


class DataLoader:
    """Batches of `dataset`, `batch_size` items each.

    - `shuffle`: a new random order each epoch, fixed by `seed` and the epoch number (with
      no seed, one is drawn from pyburn's default generator, see `pyburn.manual_seed`);
    - `sampler`: the indices of each epoch, in order (`pyburn.data.sampler`), instead of
      ``range(len(dataset))`` or its shuffle (so not with `shuffle`); ``len(loader)`` counts
      the batches of ``len(sampler)`` indices;
    - `drop_last`: leave out the last batch when it is smaller than `batch_size`;
    - `collate`: a function from the list of items to a batch; by default
      `default_collate`, or, for a dataset with ``get_batch(indices)`` (`TensorDataset`,
      `MNIST`), that method: one call per batch, no work per item;
    - `num_workers`: threads that fetch batches ahead of use, at most
      ``num_workers * prefetch_factor`` of them; the batches and their order are the same as
      with 0 (where threads cannot run, as in Pyodide, the work is done in the loop);
    - `device`: where the batches' tensors go (None: new tensors go to the default device,
      existing ones stay where they are).

    >>> loader = DataLoader(list(range(5)), batch_size=2, device="flex")
    >>> [b.tolist() for b in loader]
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset: Dataset, batch_size: int = 1, shuffle: bool = False,
                 seed: int | None = None, drop_last: bool = False,
                 collate: Callable[[list[Any]], Any] | None = None, num_workers: int = 0,
                 device: DeviceLike = None, prefetch_factor: int = 2,
                 sampler: Sampler | None = None):
        if not isinstance(dataset, Dataset):
            raise ArgumentError(f"DataLoader needs a dataset (with __len__ and __getitem__), "
                                f"got {type(dataset).__name__}")
        seed = check_seed(seed, "DataLoader")
        if sampler is not None and not isinstance(sampler, Sampler):
            raise ArgumentError(f"DataLoader sampler needs indices(epoch) and __len__, got "
                                f"{type(sampler).__name__}")
        if sampler is not None and shuffle:
            raise ArgumentError("DataLoader takes shuffle=True or a sampler, not both (the "
                                "sampler decides the order)")
        if collate is not None and not callable(collate):
            raise ArgumentError(f"DataLoader collate must be callable, got {collate!r}")
        self.dataset = dataset
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.num_workers = _check_int("num_workers", num_workers, 0)
        self.prefetch_factor = _check_int("prefetch_factor", prefetch_factor, 1)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate = collate
        self.device = device
        # whether the sampler is the caller's (its length goes into the state) or the loader's
        self._given_sampler = sampler is not None
        self.sampler: Sampler = (sampler if sampler is not None
                                 else RandomSampler(len(dataset), seed=seed) if shuffle
                                 else SequentialSampler(len(dataset)))
        self._epoch = 0
        self._position = 0
        self._active: weakref.ref | None = None  # the iterator now handing out batches

    # ---- the cursor ---------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The epoch the next batch comes from (counts from 0)."""
        return self._epoch

    @property
    def position(self) -> int:
        """How many batches of the current epoch have been handed out."""
        return self._position

    @property
    def seed(self) -> int | None:
        """The seed of the order: the sampler's (None for a fixed order)."""
        return getattr(self.sampler, "seed", None)

    def set_epoch(self, epoch: int) -> None:
        """Start epoch `epoch` from its first batch (an iteration in progress stops)."""
        self._stop_active()
        self._epoch = _check_int("epoch", epoch, 0)
        self._position = 0

    def state_dict(self) -> dict[str, int | None]:
        """The cursor and what it depends on, as plain ints, for a checkpoint. Taken inside
        the loop, it counts the batch being worked on as done. A loader given a sampler also
        saves the sampler's length (``sampler_length``)."""
        state = {"epoch": self._epoch, "position": self._position, "seed": self.seed,
                 "num_items": len(self.dataset), "batch_size": self.batch_size}
        if self._given_sampler:
            state["sampler_length"] = self._sampler_length()
        return state

    def _sampler_length(self) -> int | None:
        """The length of the sampler given to the loader; None when it has its own."""
        return len(self.sampler) if self._given_sampler else None

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Put back a cursor saved by `state_dict`: the next iteration yields the batches
        that came after it (an iteration in progress stops). The dataset's length, the
        batch size and the sampler's length must be those of the saved loader; the seed is
        put back (into the sampler, for a sampler given to the loader)."""
        missing = {"epoch", "position", "seed", "num_items", "batch_size"} - set(state)
        if missing:
            raise ArgumentError(f"DataLoader state lacks {sorted(missing)}")
        if state["num_items"] != len(self.dataset) or state["batch_size"] != self.batch_size:
            raise ArgumentError(
                f"DataLoader state is for {state['num_items']} items in batches of "
                f"{state['batch_size']}; this loader has {len(self.dataset)} in batches of "
                f"{self.batch_size}")
        if state.get("sampler_length") != self._sampler_length():
            raise ArgumentError(
                f"DataLoader state is for {_describe_sampler(state.get('sampler_length'))}; "
                f"this loader has {_describe_sampler(self._sampler_length())}")
        if (state["seed"] is None) != (self.seed is None):
            raise ArgumentError(f"DataLoader state has seed {state['seed']!r} but this loader's "
                                f"order is {'fixed' if self.seed is None else 'random'}")
        if state["seed"] is not None:
            _check_int("state seed", state["seed"], 0)
        epoch = _check_int("state epoch", state["epoch"], 0)
        position = _check_int("state position", state["position"], 0)
        if position > len(self):
            raise ArgumentError(f"DataLoader state position {position} is past the "
                                f"{len(self)} batches of an epoch")
        self._stop_active()
        if state["seed"] is not None:
            self.sampler.seed = state["seed"]  # type: ignore[attr-defined]
        self._epoch, self._position = epoch, position

    # ---- batches --------------------------------------------------------------------------
    def __len__(self) -> int:
        """Batches per epoch."""
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def batch_indices(self, epoch: int | None = None) -> list[list[int]]:
        """The dataset indices of each batch of `epoch` (default: the current one)."""
        epoch = self._epoch if epoch is None else _check_int("epoch", epoch, 0)
        order = self.sampler.indices(epoch)
        if len(order) != len(self.sampler):
            raise ArgumentError(f"the sampler gave {len(order)} indices for epoch {epoch}, "
                                f"but its len() is {len(self.sampler)}")
        size = self.batch_size
        return [order[i * size:(i + 1) * size] for i in range(len(self))]

    def _fetch(self, get_batch: Callable | None, indices: list[int]) -> Any:
        if get_batch is not None:
            return to_device(get_batch(indices), self.device)
        items = [self.dataset[i] for i in indices]
        if self.collate is None:
            return default_collate(items, self.device)
        return to_device(self.collate(items), self.device)

    def __iter__(self) -> Generator[Any, None, None]:
        """The rest of the current epoch's batches; a new iteration stops the previous one."""
        self._stop_active()
        batches = self._batches()
        self._active = weakref.ref(batches)
        return batches

    def __aiter__(self) -> AsyncIterator[Any]:
        """``async for batch in loader``: the Pyodide path. The same batches as ``for``, in
        the same order, moving the cursor the same way, with ``await asyncio.sleep(0)`` after
        each, so that the event loop (a browser page's drawing and input) runs between
        batches; threads, which would do the work in the background elsewhere, do not exist
        there. It is an iteration like any other: starting one stops the previous one."""
        return self._batches_async(iter(self))

    async def _batches_async(self, batches: Generator[Any, None, None]) -> AsyncIterator[Any]:
        import asyncio  # import time: only this path needs it, and it costs more than pyburn.data

        try:
            for batch in batches:
                yield batch
                await asyncio.sleep(0)
        finally:
            batches.close()

    def _batches(self) -> Generator[Any, None, None]:
        epoch = self._epoch
        plan = self.batch_indices(epoch)[self._position:]
        get_batch = getattr(self.dataset, "get_batch", None) if self.collate is None else None

        def fetch(indices: list[int]) -> Any:
            return self._fetch(get_batch, indices)

        if self.num_workers and threads_available():
            source = prefetch(fetch, plan, self.num_workers,
                              self.num_workers * self.prefetch_factor)
        else:
            source = map(fetch, plan)
        try:
            for batch in source:
                self._position += 1
                yield batch
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()
        self._epoch, self._position = epoch + 1, 0

    def _stop_active(self) -> None:
        active = self._active() if self._active is not None else None
        if active is not None:
            active.close()
        self._active = None

    def __repr__(self) -> str:
        sampler = f", sampler={self.sampler!r}" if self._given_sampler else ""
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}{sampler}, epoch={self._epoch}, "
                f"position={self._position})")

