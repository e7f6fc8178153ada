"""Samplers: which dataset indices each epoch visits, and in what order.

A sampler is anything with ``indices(epoch) -> list[int]`` and ``len(sampler)`` (the `Sampler`
protocol); ``DataLoader(dataset, sampler=...)`` batches the indices it gives for the loader's
epoch. The samplers here are deterministic: ``indices(epoch)`` depends only on their
arguments, their `seed` and `epoch`, so a loader resumed from a checkpoint sees the same
order. Their random draws read epoch ``e``'s stretch of the Philox-4x32-10 stream keyed by the
seed (from word ``e * 2**32``, see `pyburn.data.shuffle`); one made without a seed draws one
from pyburn's default generator, so `pyburn.manual_seed` fixes it.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Sequence
from numbers import Real
from typing import Any, Protocol, runtime_checkable

from ..errors import ArgumentError
from .dataset import check_int
from .shuffle import (
    EPOCH_STRIDE,
    MAX_ITEMS,
    check_seed,
    fresh_seed,
    permutation,
    uniform_floats,
    uniform_ints,
)


@runtime_checkable
class Sampler(Protocol):
    """What `DataLoader` needs from a sampler: the indices of each epoch, in order, and how
    many there are (the same number every epoch). A sampler with a `seed` attribute has it
    saved in the loader's checkpoints and put back on resume."""

    def __len__(self) -> int: ...

    def indices(self, epoch: int) -> list[int]: ...


def _check_epoch(sampler: Sampler, epoch: Any) -> int:
    return check_int(f"{type(sampler).__name__} epoch", epoch, 0)


def _check_count(what: str, value: Any) -> int:
    count = check_int(what, value, 0)
    if count > MAX_ITEMS:
        raise ArgumentError(f"{what} must be at most {MAX_ITEMS}, got {count}")
    return count


class SequentialSampler(Sampler):
    """``0, 1, ..., n - 1`` every epoch.

    >>> SequentialSampler(3).indices(epoch=5)
    [0, 1, 2]
    """

    #: no randomness
    seed = None

    def __init__(self, n: int):
        self.n = _check_count("SequentialSampler n", n)

    def __len__(self) -> int:
        return self.n

    def indices(self, epoch: int) -> list[int]:
        """``list(range(n))`` whatever the epoch."""
        _check_epoch(self, epoch)
        return list(range(self.n))

    def __repr__(self) -> str:
        return f"SequentialSampler({self.n})"


class _SeededSampler(Sampler):
    """A sampler whose draws come from `seed` (drawn from the default generator when None)."""

    def __init__(self, seed: int | None):
        checked = check_seed(seed, type(self).__name__)
        self.seed = fresh_seed() if checked is None else checked


class RandomSampler(_SeededSampler):
    """`num_samples` (default `n`) random indices in ``[0, n)`` each epoch.

    Without replacement they are the first `num_samples` of ``permutation(n, seed, epoch)``
    (so at most `n`, all different); with replacement each is drawn uniformly and
    independently by `uniform_ints` (Lemire's multiply-shift with rejection: no modulo bias).

    >>> sorted(RandomSampler(4, seed=0).indices(0))
    [0, 1, 2, 3]
    >>> len(RandomSampler(4, replacement=True, num_samples=10, seed=0).indices(0))
    10
    """

    def __init__(self, n: int, *, replacement: bool = False, num_samples: int | None = None,
                 seed: int | None = None):
        self.n = _check_count("RandomSampler n", n)
        self.replacement = bool(replacement)
        self.num_samples = (self.n if num_samples is None
                            else _check_count("RandomSampler num_samples", num_samples))
        if not self.replacement and self.num_samples > self.n:
            raise ArgumentError(f"RandomSampler without replacement draws at most n={self.n} "
                                f"indices, got num_samples={self.num_samples}")
        if self.replacement and self.n == 0 and self.num_samples:
            raise ArgumentError("RandomSampler cannot draw from n=0 indices")
        super().__init__(seed)

    def __len__(self) -> int:
        return self.num_samples

    def indices(self, epoch: int) -> list[int]:
        """The indices of `epoch` (>= 0)."""
        offset = _check_epoch(self, epoch) * EPOCH_STRIDE
        if self.replacement:
            return uniform_ints(self.num_samples, self.n, self.seed, offset)
        return permutation(self.n, self.seed, epoch)[:self.num_samples]

    def __repr__(self) -> str:
        return (f"RandomSampler({self.n}, replacement={self.replacement}, "
                f"num_samples={self.num_samples}, seed={self.seed})")


class WeightedRandomSampler(_SeededSampler):
    """`num_samples` indices each epoch, index ``i`` drawn with probability proportional to
    ``weights[i]`` (finite numbers >= 0, not all 0; a tensor or array is read with
    ``tolist()``).

    - With replacement (the default), each index is drawn independently: a uniform float
      ``u`` (`uniform_floats`, two words per draw) picks the first index whose cumulative
      weight exceeds ``u * sum(weights)`` (inverse CDF); an index of weight 0 is never drawn.
    - Without replacement, the indices are those an urn would give, removing each as it is
      drawn: index ``i`` gets the key ``-log(1 - u_i) / weights[i]`` (an exponential draw of
      rate ``weights[i]``, from the uniform float ``u_i``) and the `num_samples` smallest keys
      are taken, smallest first (Efraimidis and Spirakis' method). `num_samples` is then at most
      the number of weights above 0.

    >>> sampler = WeightedRandomSampler([0.0, 1.0, 3.0], 5, seed=0)
    >>> len(sampler), set(sampler.indices(0)) <= {1, 2}
    (5, True)
    """

    def __init__(self, weights: Iterable[float], num_samples: int, *,
                 replacement: bool = True, seed: int | None = None):
        tolist = getattr(weights, "tolist", None)
        self.weights = [_check_weight(i, w)
                        for i, w in enumerate(tolist() if callable(tolist) else weights)]
        positive = [i for i, w in enumerate(self.weights) if w > 0]
        if not positive:
            raise ArgumentError("WeightedRandomSampler needs a weight above 0")
        _check_count("WeightedRandomSampler weights' length", len(self.weights))
        self.num_samples = _check_count("WeightedRandomSampler num_samples", num_samples)
        self.replacement = bool(replacement)
        if not self.replacement and self.num_samples > len(positive):
            raise ArgumentError(f"WeightedRandomSampler without replacement draws at most the "
                                f"{len(positive)} indices of weight above 0, got "
                                f"num_samples={self.num_samples}")
        self.cumulative = list(itertools.accumulate(self.weights))
        # u * total may round up to total itself: the last index that can be drawn then
        self.last = positive[-1]
        super().__init__(seed)

    def __len__(self) -> int:
        return self.num_samples

    def indices(self, epoch: int) -> list[int]:
        """The indices of `epoch` (>= 0)."""
        offset = _check_epoch(self, epoch) * EPOCH_STRIDE
        if self.replacement:
            total = self.cumulative[-1]
            return [min(bisect.bisect_right(self.cumulative, u * total), self.last)
                    for u in uniform_floats(self.num_samples, self.seed, offset)]
        uniforms = uniform_floats(len(self.weights), self.seed, offset)
        keys = [-math.log1p(-u) / w if w > 0 else math.inf
                for u, w in zip(uniforms, self.weights)]
        return sorted(range(len(keys)), key=keys.__getitem__)[:self.num_samples]

    def __repr__(self) -> str:
        return (f"WeightedRandomSampler(<{len(self.weights)} weights>, {self.num_samples}, "
                f"replacement={self.replacement}, seed={self.seed})")


def _check_weight(i: int, w: Any) -> float:
    if isinstance(w, bool) or not isinstance(w, Real) or not math.isfinite(w) or w < 0:
        raise ArgumentError(f"WeightedRandomSampler weight {i} must be a finite number >= 0, "
                            f"got {w!r}")
    return float(w)


class SubsetRandomSampler(_SeededSampler):
    """The given `indices` in a new random order each epoch: ``[indices[j] for j in
    permutation(len(indices), seed, epoch)]``. A validation split that is shuffled is one of
    these over the split's indices.

    >>> sorted(SubsetRandomSampler([7, 3, 5], seed=1).indices(0))
    [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], seed: int | None = None):
        self.subset = [check_int("SubsetRandomSampler index", i, 0) for i in indices]
        _check_count("SubsetRandomSampler's number of indices", len(self.subset))
        super().__init__(seed)

    def __len__(self) -> int:
        return len(self.subset)

    def indices(self, epoch: int) -> list[int]:
        """The subset in `epoch`'s order (`epoch` >= 0)."""
        order = permutation(len(self.subset), self.seed, _check_epoch(self, epoch))
        return [self.subset[j] for j in order]

    def __repr__(self) -> str:
        return f"SubsetRandomSampler(<{len(self.subset)} indices>, seed={self.seed})"


class DistributedSampler(Sampler):
    """Replica `rank`'s share of ``range(n)`` when `num_replicas` processes train together,
    as PyTorch's ``DistributedSampler`` shares it.

    Every replica orders the indices the same way: ``permutation(n, seed, epoch)`` with
    `shuffle` (so every replica must be given the same `seed`; there is no default generator
    to draw it from), ``range(n)`` without. Each replica gets ``ceil(n / num_replicas)``
    indices: the order is padded to ``num_replicas`` times that by starting over from its
    beginning, as often as needed. With `drop_last`, each gets ``n // num_replicas`` and the
    tail of the order is left out instead. Replica ``r`` takes every `num_replicas`-th index
    of the (padded or cut) order from position ``r``. Without padding the replicas' indices
    are disjoint; together they cover every index, or all but the dropped tail.

    The epoch comes from the loader (``DataLoader.set_epoch``, or the loader's own count), so
    unlike PyTorch's there is no ``set_epoch`` on the sampler.

    >>> [DistributedSampler(5, 2, r, shuffle=False).indices(0) for r in (0, 1)]
    [[0, 2, 4], [1, 3, 0]]
    """

    def __init__(self, n: int, num_replicas: int, rank: int, *, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        self.n = _check_count("DistributedSampler n", n)
        self.num_replicas = check_int("DistributedSampler num_replicas", num_replicas, 1)
        self.rank = check_int("DistributedSampler rank", rank, 0)
        if self.rank >= self.num_replicas:
            raise ArgumentError(f"DistributedSampler rank must be below num_replicas="
                                f"{self.num_replicas}, got {self.rank}")
        checked = check_seed(seed, "DistributedSampler")
        if checked is None:
            raise ArgumentError("DistributedSampler needs the same int seed on every replica, "
                                "got None")
        self.shuffle = bool(shuffle)
        self.seed = checked if self.shuffle else None
        self.drop_last = bool(drop_last)
        self.num_samples = (self.n // self.num_replicas if self.drop_last
                            else -(-self.n // self.num_replicas))

    def __len__(self) -> int:
        return self.num_samples

    def indices(self, epoch: int) -> list[int]:
        """This replica's indices for `epoch` (>= 0)."""
        epoch = _check_epoch(self, epoch)
        order = range(self.n) if self.seed is None else permutation(self.n, self.seed, epoch)
        total = self.num_samples * self.num_replicas
        return [order[i % self.n] for i in range(self.rank, total, self.num_replicas)]

    def __repr__(self) -> str:
        return (f"DistributedSampler({self.n}, num_replicas={self.num_replicas}, "
                f"rank={self.rank}, shuffle={self.shuffle}, seed={self.seed}, "
                f"drop_last={self.drop_last})")
