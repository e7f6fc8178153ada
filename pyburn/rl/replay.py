"""Replay buffers: the transitions an agent has seen, kept in preallocated tensors on any
device and sampled in batches for off-policy learning (DQN's experience replay).
`ReplayBuffer` samples uniformly; `PrioritizedReplayBuffer` samples in proportion to
priorities from the agents' TD errors (Schaul et al., 2016).

Each buffer draws its random numbers from its own `pyburn.Generator` (Philox, seeded by
`seed`): uniform indices are drawn on the buffer's device by `pyburn.randint`, the
prioritized buffer's masses from the same stream in Python (the numbers
``pyburn.rand(n, dtype=pyburn.float64, generator=...)`` would give), so a seed fixes the
samples on every device.

>>> buffer = ReplayBuffer(100, (2,), device="flex", seed=0)
>>> buffer.add([0.5, 1.0], 1, 1.0, [0.6, 1.1], False)
>>> batch = buffer.sample(4)
>>> len(buffer), batch.observations.shape, batch.actions.tolist()
(1, (4, 2), [1, 1, 1, 1])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .._tensor import Tensor
from ..devices import device as as_device
from ..dtypes import bool_, float32
from ..errors import ArgumentError
from ..ops.creation import DeviceLike, tensor, zeros
from ..ops.indexing import index_select, scatter
from ..ops.movement import broadcast_to, reshape
from ..ops.random_tensors import randint
from ..random import Generator, random_words
from ..shape import as_shape
from .sum_tree import SumTree


class Transitions(NamedTuple):
    """A batch of transitions: row ``k`` of each tensor belongs to the same one."""

    observations: Tensor
    actions: Tensor
    rewards: Tensor
    next_observations: Tensor
    dones: Tensor


class PrioritizedTransitions(NamedTuple):
    """A prioritized batch: `Transitions`' tensors, the importance-sampling `weights` that
    correct a loss for the non-uniform sampling (float32) and the buffer `indices` of the
    rows (int32), for `PrioritizedReplayBuffer.update_priorities`."""

    observations: Tensor
    actions: Tensor
    rewards: Tensor
    next_observations: Tensor
    dones: Tensor
    weights: Tensor
    indices: Tensor


class ReplayBuffer:
    """The newest `capacity` transitions, in five tensors of `capacity` rows on `device`:
    observations and next observations (`observation_shape`, `observation_dtype`), actions
    (`action_shape`, `action_dtype`: the default int32, pyburn's index dtype, holds discrete
    actions on every device; int64 only on cpu and flex), rewards (float32) and done
    flags (bool). Once full, each new row overwrites the oldest.

    A write is one ``scatter`` per tensor, whatever the number of rows: the rows are
    gathered into one tensor per field (one upload to the device) and scattered into the
    stored tensor along dim 0. The backends' scatter gives a new tensor, so a write copies
    the stored tensors on the device (and on flex, in Python): add a vector environment's
    step with `add_batch` rather than row by row.
    """

    def __init__(self, capacity: int, observation_shape: Sequence[int] | int, *,
                 action_shape: Sequence[int] | int = (), action_dtype: Any = "int32",
                 observation_dtype: Any = "float32", device: DeviceLike = None,
                 seed: int | None = None):
        if not isinstance(capacity, int) or capacity < 1:
            raise ArgumentError(f"a replay buffer holds a positive number of transitions, got "
                                f"{capacity!r}")
        self.capacity = capacity
        self.device = as_device(device)
        self.generator = Generator(seed)
        observation_shape = as_shape((observation_shape,), "observation shape")
        action_shape = as_shape((action_shape,), "action shape")
        dev = self.device
        #: the stored tensors by `Transitions` field, `capacity` rows each
        self.storage: dict[str, Tensor] = {
            "observations": zeros((capacity, *observation_shape), dtype=observation_dtype,
                                  device=dev),
            "actions": zeros((capacity, *action_shape), dtype=action_dtype, device=dev),
            "rewards": zeros(capacity, dtype=float32, device=dev),
            "next_observations": zeros((capacity, *observation_shape), dtype=observation_dtype,
                                       device=dev),
            "dones": zeros(capacity, dtype=bool_, device=dev),
        }
        #: the row the next transition goes to, and the number of rows that hold one
        self.position, self.size = 0, 0

    def __len__(self) -> int:
        return self.size

    def add(self, observation: Any, action: Any, reward: float, next_observation: Any,
            done: bool) -> None:
        """Store one transition (values as lists, numbers, numpy arrays or tensors).
        `done` says whether the episode terminated there (not merely truncated), so that
        a learner does not bootstrap past it."""
        self.add_batch(*(_one_row(value) for value in
                         (observation, action, reward, next_observation, done)))

    def add_batch(self, observations: Any, actions: Any, rewards: Any, next_observations: Any,
                  dones: Any) -> None:
        """Store a batch of transitions, one row of each argument per transition (a vector
        environment's step: pass ``info["final_observation"]``'s entry as the next
        observation where an episode ended). A batch larger than the buffer leaves its last
        `capacity` rows."""
        self._write(observations, actions, rewards, next_observations, dones)

    def _write(self, *values: Any) -> list[int]:
        """Write the rows of `values` (one per `Transitions` field); the rows written."""
        rows = [self._rows(name, value) for name, value in zip(self.storage, values)]
        count = rows[0].shape[0]
        if any(r.shape[0] != count for r in rows):
            counts = ", ".join(f"{n} {r.shape[0]}" for n, r in zip(self.storage, rows))
            raise ArgumentError(f"a batch of transitions has as many rows of each field, got "
                                f"{counts}")
        if count > self.capacity:  # only the newest rows stay: write no row twice
            rows = [r[count - self.capacity:] for r in rows]
            count = self.capacity
        positions = [(self.position + k) % self.capacity for k in range(count)]
        index = tensor(positions, device=self.device)
        for name, r in zip(self.storage, rows):
            into = broadcast_to(reshape(index, (count,) + (1,) * (r.ndim - 1)), r.shape)
            self.storage[name] = scatter(self.storage[name], 0, into, r)
        self.position = (self.position + count) % self.capacity
        self.size = min(self.size + count, self.capacity)
        return positions

    def _rows(self, name: str, value: Any) -> Tensor:
        """`value` as a tensor of rows of the stored field `name` (its dtype, on the
        buffer's device)."""
        stored = self.storage[name]
        rows = tensor(value, dtype=stored.dtype, device=self.device).detach()
        if rows.ndim == 0 or rows.shape[1:] != stored.shape[1:]:
            raise ArgumentError(f"{name}: rows of shape {stored.shape[1:]} expected, in a "
                                f"batch of shape (n, *{stored.shape[1:]}), got {rows.shape}")
        return rows

    def sample(self, batch_size: int) -> Transitions:
        """`batch_size` transitions drawn uniformly, with replacement (one ``index_select``
        per field; the indices are drawn on the device, uniform up to a bias below
        ``len(self) / 2**31``)."""
        self._check_sample(batch_size)
        index = randint(0, self.size, (batch_size,), device=self.device,
                        generator=self.generator)
        return self._select(index)

    def _check_sample(self, batch_size: int) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ArgumentError(f"a batch holds a positive number of transitions, got "
                                f"{batch_size!r}")
        if self.size == 0:
            raise ArgumentError("cannot sample from an empty replay buffer")

    def _select(self, index: Tensor) -> Transitions:
        """The rows `index` of each stored tensor."""
        return Transitions(**{name: index_select(stored, 0, index)
                              for name, stored in self.storage.items()})

    def state_dict(self) -> dict[str, Any]:
        """The stored tensors, the write position, the size and the generator's state."""
        return {**self.storage, "position": self.position, "size": self.size,
                "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict` (of a buffer of the same capacity and shapes)."""
        for name, stored in self.storage.items():
            if state[name].shape != stored.shape:
                raise ArgumentError(f"{name}: a state of shape {state[name].shape} for a buffer "
                                    f"of shape {stored.shape}")
        for name, stored in self.storage.items():
            self.storage[name] = tensor(state[name], dtype=stored.dtype, device=self.device)
        self.position, self.size = int(state["position"]), int(state["size"])
        self.generator.set_state(state["generator"])


def _one_row(value: Any) -> Any:
    """`value` as a batch of one row."""
    return value.unsqueeze(0) if isinstance(value, Tensor) else [value]


class PrioritizedReplayBuffer(ReplayBuffer):
    """A `ReplayBuffer` that samples transition ``i`` with probability ``P(i) = p_i^alpha /
    sum_k p_k^alpha``, its priority ``p_i = |TD error| + eps`` (set by `update_priorities`;
    a new transition gets the largest priority so far, 1 at first, so that it is sampled
    at least once soon). The other arguments are `ReplayBuffer`'s.

    `sample` is stratified: the total priority is cut into `batch_size` equal segments and
    one mass drawn uniformly in each is looked up in a `SumTree` (O(log n) per row). It
    returns importance weights ``w_i = (N P(i))^-beta / max_k w_k``, the maximum over the
    whole buffer (``N = len(self)``, the smallest priority's weight), so that weights only
    scale a loss down; anneal `beta` towards 1 by setting the attribute.
    """

    def __init__(self, capacity: int, observation_shape: Sequence[int] | int, *,
                 alpha: float = 0.6, beta: float = 0.4, eps: float = 1e-6, **options: Any):
        super().__init__(capacity, observation_shape, **options)
        if alpha < 0 or beta < 0 or not eps > 0:
            raise ArgumentError(f"a prioritized buffer takes alpha >= 0, beta >= 0 and eps > 0, "
                                f"got {alpha}, {beta} and {eps}")
        self.alpha, self.beta, self.eps = alpha, beta, eps
        self.tree = SumTree(capacity)
        #: the largest priority ``|TD error| + eps`` so far, new transitions' priority
        self.max_priority = 1.0

    def add_batch(self, observations: Any, actions: Any, rewards: Any, next_observations: Any,
                  dones: Any) -> None:
        """`ReplayBuffer.add_batch`; the new rows get the largest priority so far."""
        for i in self._write(observations, actions, rewards, next_observations, dones):
            self.tree.update(i, self.max_priority ** self.alpha)

    def sample(self, batch_size: int) -> PrioritizedTransitions:  # type: ignore[override]
        """`batch_size` transitions drawn in proportion to their priorities (stratified),
        with their importance weights and buffer indices."""
        self._check_sample(batch_size)
        segment = self.tree.total / batch_size
        picks = [self.tree.find((k + u) * segment)
                 for k, u in enumerate(self._uniforms(batch_size))]
        n, total = self.size, self.tree.total
        largest = (n * self.tree.min / total) ** -self.beta
        weights = [(n * self.tree[i] / total) ** -self.beta / largest for i in picks]
        index = tensor(picks, device=self.device)
        return PrioritizedTransitions(*self._select(index),
                                      tensor(weights, dtype=float32, device=self.device), index)

    def _uniforms(self, n: int) -> list[float]:
        """`n` uniform floats in [0, 1) with 53 bits, from two words of the generator's
        stream each (as ``pyburn.rand(n, dtype=float64)`` makes them)."""
        seed, offset = self.generator.take(2 * n)
        words = random_words(2 * n, seed, offset)
        return [((high & 0x3FFFFFF) * 2.0**27 + (low & 0x7FFFFFF)) * 2.0**-53
                for high, low in zip(words[0::2], words[1::2])]

    def update_priorities(self, indices: Any, td_errors: Any) -> None:
        """Set the priorities ``|TD error| + eps`` of the transitions at `indices` (a batch's
        `indices` and its TD errors, tensors or sequences of numbers; a tensor is read back,
        which waits for the device)."""
        indices = _numbers(indices)
        td_errors = _numbers(td_errors)
        if len(indices) != len(td_errors):
            raise ArgumentError(f"{len(indices)} indices and {len(td_errors)} TD errors")
        for i, error in zip(indices, td_errors):
            if not 0 <= i < self.size:
                raise ArgumentError(f"index {i} is outside a buffer of {self.size} transitions")
            priority = abs(float(error)) + self.eps
            self.tree.update(int(i), priority ** self.alpha)
            self.max_priority = max(self.max_priority, priority)

    def state_dict(self) -> dict[str, Any]:
        """`ReplayBuffer.state_dict` with the priorities (``p_i^alpha``) of the stored rows
        and the largest priority so far."""
        return {**super().state_dict(), "max_priority": self.max_priority,
                "priorities": [self.tree[i] for i in range(self.size)]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a `state_dict` (of a buffer of the same capacity and shapes)."""
        super().load_state_dict(state)
        self.tree = SumTree(self.capacity)
        for i, priority in enumerate(state["priorities"]):
            self.tree.update(i, priority)
        self.max_priority = float(state["max_priority"])


def _numbers(values: Any) -> list[Any]:
    """A flat list of the numbers in a tensor (read back) or a sequence."""
    return reshape(values, -1).tolist() if isinstance(values, Tensor) else list(values)
