"""pyburn.rl's replay buffers on every device: uniform sampling (chi-square), the circular
overwrite, shapes refused; the sum tree against numpy's sums; prioritized sampling in
proportion to p^alpha (chi-square), importance weights against numpy in float64, priority
updates; checkpoints of both buffers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyburn
from pyburn.rl import (
    CartPole,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    SumTree,
    SyncVectorEnv,
)

stats = pytest.importorskip("scipy.stats")


def actions_on(device: pyburn.Device) -> str:
    """The dtype for discrete actions on `device`: int64 where it holds them."""
    return "int64" if "int64" in device.caps else "int32"


def new(kind: type[ReplayBuffer], capacity: int, shape: Any, device: pyburn.Device,
        **options: Any) -> Any:
    """A buffer of `kind` on `device`, holding actions as that device can."""
    return kind(capacity, shape, device=device, action_dtype=actions_on(device), **options)


def fill(buffer: ReplayBuffer, count: int, start: int = 0) -> None:
    """Transitions whose every field tells its number k: observation [k, -k], action k,
    reward k / 2, next observation [k + 1, -k - 1], done for odd k."""
    ks = list(range(start, start + count))
    buffer.add_batch([[k, -k] for k in ks], ks, [k / 2 for k in ks],
                     [[k + 1, -k - 1] for k in ks], [k % 2 == 1 for k in ks])


def numbers(batch) -> list[int]:
    """The transition numbers of a batch's rows, once checked that every field agrees."""
    ks = [int(row[0]) for row in batch.observations.tolist()]
    assert batch.actions.tolist() == ks
    assert batch.rewards.tolist() == [k / 2 for k in ks]
    assert batch.next_observations.tolist() == [[k + 1, -k - 1] for k in ks]
    assert batch.dones.tolist() == [k % 2 == 1 for k in ks]
    return ks


def test_uniform_sampling_is_uniform(device):
    buffer = new(ReplayBuffer, 6, (2,), device, seed=0)
    fill(buffer, 6)
    batch = buffer.sample(600)
    assert batch.observations.shape == (600, 2) and batch.observations.device is device
    assert batch.actions.dtype.name == actions_on(device)
    counts = np.bincount(numbers(batch), minlength=6)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_the_newest_rows_stay(device):
    buffer = new(ReplayBuffer, 4, 2, device, seed=1)
    fill(buffer, 3)
    assert len(buffer) == 3 and set(numbers(buffer.sample(40))) == {0, 1, 2}
    for k in range(3, 6):
        buffer.add([k, -k], k, k / 2, [k + 1, -k - 1], k % 2 == 1)
    assert len(buffer) == 4 and buffer.position == 2
    assert buffer.storage["actions"].tolist() == [4, 5, 2, 3]
    assert set(numbers(buffer.sample(40))) == {2, 3, 4, 5}
    fill(buffer, 9, start=10)  # more than the buffer holds: the last 4 rows, from row 2 on
    assert buffer.storage["actions"].tolist() == [17, 18, 15, 16] and buffer.position == 2


def test_a_vector_environments_steps_go_in_whole(device):
    envs = SyncVectorEnv([CartPole] * 3)
    observations, _ = envs.reset(seed=0)
    buffer = new(ReplayBuffer, 8, (4,), device, seed=0)
    for actions in ([0, 0, 0], [0, 0, 0], [1, 1, 1]):  # 9 rows: the last one goes to row 0
        next_observations, rewards, terminated, _, _ = envs.step(actions)
        buffer.add_batch(observations, actions, rewards, next_observations, terminated)
        observations = next_observations
    assert len(buffer) == 8 and buffer.storage["actions"].tolist() == [1] + [0] * 5 + [1, 1]
    stored = buffer.storage["next_observations"].tolist()
    for row, observation in zip((6, 7, 0), next_observations):
        assert stored[row] == pytest.approx(observation, rel=1e-6)


def test_wrong_shapes_and_misuse_are_refused(device):
    buffer = new(ReplayBuffer, 4, (2,), device)
    with pytest.raises(pyburn.ArgumentError, match="empty"):
        buffer.sample(1)
    with pytest.raises(pyburn.ArgumentError, match="observations"):
        buffer.add([1.0, 2.0, 3.0], 0, 0.0, [1.0, 2.0], False)
    with pytest.raises(pyburn.ArgumentError, match="actions"):
        buffer.add([1.0, 2.0], [0, 1], 0.0, [1.0, 2.0], False)
    with pytest.raises(pyburn.ArgumentError, match="as many rows"):
        buffer.add_batch([[1.0, 2.0]] * 2, [0], [0.0] * 2, [[1.0, 2.0]] * 2, [False] * 2)
    with pytest.raises(pyburn.ArgumentError, match="positive"):
        ReplayBuffer(0, (2,))
    fill(buffer, 1)
    with pytest.raises(pyburn.ArgumentError, match="positive"):
        buffer.sample(0)
    assert len(buffer) == 1  # nothing refused was stored


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.just(0.0) | st.floats(0.01, 100.0)),
                         min_size=1, max_size=40))))
def test_the_sum_tree_sums_as_numpy_does(case):
    capacity, updates = case
    tree, priorities = SumTree(capacity), np.zeros(capacity)
    for i, priority in updates:
        tree.update(i, priority)
        priorities[i] = priority
    ends = np.cumsum(priorities)
    assert tree.total == pytest.approx(ends[-1])
    assert [tree[i] for i in range(capacity)] == priorities.tolist()
    set_ones = sorted({i for i, _ in updates})
    assert tree.min == priorities[set_ones].min()
    for i in np.flatnonzero(priorities):  # the middle of each item's stretch of mass
        assert tree.find(ends[i] - priorities[i] / 2) == i
    if ends[-1] > 0:  # past the total: the last item that has mass
        assert tree.find(ends[-1] * 2) == np.flatnonzero(priorities)[-1]


def prioritized(device: pyburn.Device, errors: list[float], **options) -> PrioritizedReplayBuffer:
    buffer = new(PrioritizedReplayBuffer, len(errors), (2,), device, seed=3, **options)
    fill(buffer, len(errors))
    buffer.update_priorities(list(range(len(errors))), errors)
    return buffer


def test_prioritized_sampling_follows_p_to_the_alpha(device):
    errors = [0.1, 0.5, 1.0, 2.0, 4.0]
    buffer = prioritized(device, errors, alpha=0.7)
    counts = np.zeros(5)
    for _ in range(4):
        batch = buffer.sample(250)
        assert numbers(batch) == batch.indices.tolist()
        counts += np.bincount(batch.indices.tolist(), minlength=5)
    p = (np.array(errors) + 1e-6) ** 0.7
    assert stats.chisquare(counts, 1000 * p / p.sum()).pvalue > 1e-3


def test_importance_weights_are_numpys(device):
    errors = [0.3, 0.0, 2.5, 1.0]
    buffer = prioritized(device, errors, alpha=0.6, beta=0.4, eps=1e-2)
    batch = buffer.sample(8)
    probabilities = (np.array(errors, dtype=np.float64) + 1e-2) ** 0.6
    probabilities /= probabilities.sum()
    weights = (4 * probabilities) ** -0.4
    weights /= weights.max()
    expected = weights[batch.indices.tolist()]
    assert batch.weights.dtype == pyburn.float32
    assert batch.weights.tolist() == pytest.approx(expected.tolist(), rel=1e-6)


def test_priorities_update_from_a_batchs_tensors(device):
    buffer = prioritized(device, [1.0, 1.0, 1.0])
    batch = buffer.sample(3)
    buffer.update_priorities(batch.indices, pyburn.tensor([9.0] * 3, device=device))
    assert buffer.max_priority == pytest.approx(9.0 + 1e-6)
    fill(buffer, 1, start=3)  # overwrites row 0 with the largest priority
    assert buffer.tree[0] == pytest.approx((9.0 + 1e-6) ** 0.6)
    with pytest.raises(pyburn.ArgumentError, match="outside"):
        buffer.update_priorities([3], [1.0])
    with pytest.raises(pyburn.ArgumentError, match="TD errors"):
        buffer.update_priorities([0, 1], [1.0])


def test_the_masses_are_pyburns_float64_uniforms():
    buffer = PrioritizedReplayBuffer(2, (1,), device="flex", seed=11)
    drawn = pyburn.rand(5, dtype=pyburn.float64, device="flex", generator=pyburn.Generator(11))
    assert buffer._uniforms(5) == drawn.tolist()


@pytest.mark.parametrize("kind", [ReplayBuffer, PrioritizedReplayBuffer])
def test_a_restored_buffer_samples_the_same(device, kind):
    buffer = new(kind, 4, (2,), device, seed=5)
    fill(buffer, 6)
    restored = new(kind, 4, (2,), device)
    restored.load_state_dict(buffer.state_dict())
    assert (restored.position, len(restored)) == (buffer.position, len(buffer))
    assert numbers(restored.sample(10)) == numbers(buffer.sample(10))
    with pytest.raises(pyburn.ArgumentError, match="shape"):
        new(kind, 4, (3,), device).load_state_dict(buffer.state_dict())
