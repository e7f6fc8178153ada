"""DataLoader: batching, shuffling, samplers, collate, workers, early stops, mid-epoch resume
and async iteration."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

import pyburn
from pyburn.data import (
    DataLoader,
    DistributedSampler,
    InMemoryDataset,
    MapDataset,
    RandomSampler,
    SequentialSampler,
    TensorDataset,
    permutation,
)
from pyburn.data.prefetch import THREAD_PREFIX, threads_available


def values(batches):
    """Plain nested lists of a sequence of batches (tensors or tuples of tensors)."""
    return [tuple(t.tolist() for t in b) if isinstance(b, tuple) else b.tolist()
            for b in batches]


def worker_threads():
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX)]


class Recording:
    """A dataset of ints that records which items were fetched, optionally slowly (so that
    threads finish out of order) and failing at one index."""

    def __init__(self, n, delay=0.0, fail_at=None):
        self.n, self.delay, self.fail_at = n, delay, fail_at
        self.fetched = []
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise RuntimeError(f"item {i} is broken")
        if self.delay:
            time.sleep(self.delay * ((i * 7) % 5))
        with self.lock:
            self.fetched.append(i)
        return i


@pytest.mark.parametrize(("drop_last", "expected"), [
    (False, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]),
    (True, [[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
])
def test_batches_in_order(device, drop_last, expected):
    loader = DataLoader(range(10), batch_size=3, drop_last=drop_last, device=device)
    assert len(loader) == len(expected)
    batches = list(loader)
    assert values(batches) == expected
    assert all(b.device is device and b.dtype is pyburn.int32 for b in batches)


def test_lengths_at_the_edges():
    assert len(DataLoader(range(3), batch_size=5)) == 1
    assert len(DataLoader(range(3), batch_size=5, drop_last=True)) == 0
    assert len(DataLoader([], batch_size=2)) == 0
    assert list(DataLoader([], batch_size=2)) == []
    assert len(DataLoader(range(6), batch_size=2, drop_last=True)) == 3


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"batch_size": 0}, "batch_size must be an int >= 1"),
    ({"batch_size": 2.0}, "batch_size"),
    ({"num_workers": -1}, "num_workers must be an int >= 0"),
    ({"prefetch_factor": 0}, "prefetch_factor"),
    ({"seed": 1.5}, "seed must be an int"),
    ({"collate": 3}, "collate must be callable"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(pyburn.ArgumentError, match=match):
        DataLoader(range(4), **kwargs)


def test_dataset_must_be_a_dataset():
    with pytest.raises(pyburn.ArgumentError, match="needs a dataset"):
        DataLoader(iter([1, 2]))


def test_shuffled_epochs_are_the_seeded_permutations(device):
    loader = DataLoader(range(10), batch_size=4, shuffle=True, seed=99, device=device)
    for epoch in range(3):
        assert loader.epoch == epoch
        order = permutation(10, 99, epoch)
        assert values(loader) == [order[0:4], order[4:8], order[8:10]]
    assert permutation(10, 99, 0) != permutation(10, 99, 1)
    again = DataLoader(range(10), batch_size=4, shuffle=True, seed=99, device=device)
    again.set_epoch(2)
    assert values(again) == [permutation(10, 99, 2)[i:i + 4] for i in (0, 4, 8)]
    assert again.epoch == 3


def test_unseeded_shuffle_follows_manual_seed():
    pyburn.manual_seed(5)
    first = DataLoader(range(50), shuffle=True).seed
    pyburn.manual_seed(5)
    assert DataLoader(range(50), shuffle=True).seed == first
    assert DataLoader(range(50), shuffle=True).seed != first
    assert DataLoader(range(50)).seed is None


def test_custom_collate_gets_the_items():
    loader = DataLoader(InMemoryDataset("abcde"), batch_size=2, collate="".join)
    assert list(loader) == ["ab", "cd", "e"]


def test_batched_datasets_make_each_batch_in_one_call(device):
    calls = []

    class Batched:
        def __len__(self):
            return 7

        def __getitem__(self, i):
            raise AssertionError("the loader should not fetch items one by one")

        def get_batch(self, indices):
            calls.append(list(indices))
            return pyburn.tensor(list(indices), device=device)

    loader = DataLoader(Batched(), batch_size=3, shuffle=True, seed=1)
    order = permutation(7, 1)
    assert values(loader) == [order[:3], order[3:6], order[6:]]
    assert calls == [order[:3], order[3:6], order[6:]]


def test_fast_path_and_item_path_agree(device):
    x = pyburn.arange(30, device=device).reshape(10, 3).float() / 7
    y = pyburn.arange(10, device=device)
    ds = TensorDataset(x, y)
    fast = DataLoader(ds, batch_size=4, shuffle=True, seed=3)
    slow = DataLoader(ds, batch_size=4, shuffle=True, seed=3, collate=lambda items: (
        pyburn.stack([a for a, _ in items]), pyburn.stack([b for _, b in items])))
    assert values(fast) == values(slow)


def test_batches_go_to_the_loader_device(device):
    others = [d for d in pyburn.available_devices() if d is not device]
    if not others:
        pytest.skip("needs a second device")
    ds = TensorDataset(pyburn.arange(6, device=device))
    (batch,) = next(iter(DataLoader(ds, batch_size=6, device=others[0])))
    assert batch.device is others[0] and batch.tolist() == list(range(6))


@pytest.mark.parametrize("workers", [1, 3])
def test_workers_give_the_same_batches_in_the_same_order(workers):
    def run(num_workers):
        ds = MapDataset(Recording(23, delay=0.001), lambda i: (i, float(i) / 2))
        loader = DataLoader(ds, batch_size=4, shuffle=True, seed=11,
                            num_workers=num_workers, device="flex")
        return [values(loader) for _ in range(2)]

    assert run(workers) == run(0)
    assert worker_threads() == []


@pytest.mark.skipif(not threads_available(), reason="this Python cannot start threads")
def test_early_stop_shuts_the_threads_down():
    ds = Recording(100, delay=0.001)
    loader = DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=2, device="flex")
    for _ in loader:
        assert worker_threads()  # the prefetching is running
        break
    assert worker_threads() == []
    # at most the batch handed out, the 4 queued behind it and the 1 refilled before handing
    # it out were ever fetched: 6 batches of 2
    assert len(ds.fetched) <= 12
    assert loader.position == 1 and loader.epoch == 0
    assert values(loader)[0] == [2, 3]  # the next iteration goes on from the cursor


def test_a_new_iteration_stops_the_previous_one():
    loader = DataLoader(Recording(40, delay=0.001), batch_size=2, num_workers=2, device="flex")
    first = iter(loader)
    next(first)
    second = iter(loader)
    assert worker_threads() == []
    assert list(first) == []
    assert len(values(second)) == 19
    assert loader.epoch == 1


def test_a_failing_item_raises_at_its_batch_and_stops_the_threads():
    loader = DataLoader(Recording(20, fail_at=9), batch_size=4, num_workers=2, device="flex")
    seen = []
    with pytest.raises(RuntimeError, match="item 9 is broken"):
        for batch in loader:
            seen.append(batch.tolist())
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert worker_threads() == []
    assert loader.position == 2 and loader.epoch == 0


def test_no_threads_where_python_cannot_start_them(monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    started = []
    ds = MapDataset(range(9), lambda i: started.append(threading.current_thread()) or i)
    loader = DataLoader(ds, batch_size=2, num_workers=4, device="flex")
    assert values(loader) == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    assert set(started) == {threading.current_thread()}


def _tensor_loader(device, **kwargs):
    x = pyburn.arange(52, device=device).reshape(26, 2).float() * 0.5
    y = pyburn.arange(26, device=device) % 3
    return DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True, seed=2024, **kwargs)


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_mid_epoch_gives_the_remaining_batches_exactly(device, workers):
    reference = _tensor_loader(device)
    epochs = [values(reference) for _ in range(3)]

    run = _tensor_loader(device)
    assert values(run) == epochs[0]
    done = []
    for batch in run:
        done.append(batch)
        if len(done) == 3:
            state = json.loads(json.dumps(run.state_dict()))  # a checkpoint holds plain data
            break
    assert values(done) == epochs[1][:3]
    assert state["epoch"] == 1 and state["position"] == 3

    resumed = _tensor_loader(device, num_workers=workers)
    resumed.load_state_dict(state)
    assert values(resumed) == epochs[1][3:]
    assert values(resumed) == epochs[2]


def test_state_taken_on_the_last_batch_resumes_into_the_next_epoch():
    loader = DataLoader(range(6), batch_size=3, shuffle=True, seed=0, device="flex")
    for _ in loader:
        state = loader.state_dict()
    assert state["position"] == 2 and state["epoch"] == 0
    resumed = DataLoader(range(6), batch_size=3, shuffle=True, seed=0, device="flex")
    resumed.load_state_dict(state)
    assert list(resumed) == []  # the epoch had no batches left ...
    assert resumed.epoch == 1  # ... and is over
    assert values(resumed) == values(loader)


def test_load_state_dict_checks_what_it_gets():
    loader = DataLoader(range(10), batch_size=3, shuffle=True, seed=1)
    good = loader.state_dict()
    for change, match in [({"position": 5}, "position 5 is past the 4 batches"),
                          ({"num_items": 11}, "11 items in batches of 3"),
                          ({"batch_size": 2}, "batches of 2"),
                          ({"seed": None}, "seed None"),
                          ({"epoch": -1}, "epoch must be an int >= 0"),
                          ({"seed": "7"}, "seed must be an int >= 0")]:
        with pytest.raises(pyburn.ArgumentError, match=match):
            loader.load_state_dict({**good, **change})
    with pytest.raises(pyburn.ArgumentError, match=r"lacks \['position'\]"):
        loader.load_state_dict({k: v for k, v in good.items() if k != "position"})


def test_set_epoch_restarts_and_stops_a_running_iteration():
    loader = DataLoader(range(6), batch_size=2, device="flex")
    it = iter(loader)
    next(it)
    loader.set_epoch(4)
    assert list(it) == []
    assert (loader.epoch, loader.position) == (4, 0)
    assert len(values(loader)) == 3 and loader.epoch == 5
    with pytest.raises(pyburn.ArgumentError, match="epoch"):
        loader.set_epoch(-2)


def test_batch_indices_lists_an_epoch():
    loader = DataLoader(range(5), batch_size=2, shuffle=True, seed=8)
    order = permutation(5, 8, 3)
    assert loader.batch_indices(3) == [order[:2], order[2:4], order[4:]]
    assert DataLoader(range(5), batch_size=2, drop_last=True).batch_indices() == [[0, 1], [2, 3]]


def test_a_sampler_gives_each_epochs_order():
    sampler = DistributedSampler(10, 3, 2, seed=5)
    loader = DataLoader(list(range(100, 110)), batch_size=3, sampler=sampler, collate=list)
    assert len(loader) == 2 and loader.seed == 5  # 4 indices: a batch of 3 and one of 1
    for epoch in range(2):
        order = [100 + i for i in sampler.indices(epoch)]
        assert list(loader) == [order[:3], order[3:]]
    assert sampler.indices(0) != sampler.indices(1)
    loader.set_epoch(0)  # set_epoch drives the sampler too
    assert list(loader)[0] == [100 + i for i in sampler.indices(0)[:3]]
    dropping = DataLoader(range(10), batch_size=3, sampler=sampler, drop_last=True)
    assert len(dropping) == 1
    # shuffle=True is the loader's own RandomSampler: the same order as giving it
    shuffled = DataLoader(range(10), batch_size=3, shuffle=True, seed=8, collate=list)
    given = DataLoader(range(10), batch_size=3, sampler=RandomSampler(10, seed=8), collate=list)
    assert list(shuffled) == list(given) and isinstance(shuffled.sampler, RandomSampler)


def test_sampler_arguments_and_a_sampler_that_lies():
    with pytest.raises(pyburn.ArgumentError, match="shuffle=True or a sampler, not both"):
        DataLoader(range(4), shuffle=True, sampler=SequentialSampler(4))
    with pytest.raises(pyburn.ArgumentError, match=r"sampler needs indices\(epoch\)"):
        DataLoader(range(4), sampler=[0, 1])

    class Short:
        def __len__(self):
            return 3

        def indices(self, epoch):
            return [0]

    with pytest.raises(pyburn.ArgumentError, match=r"gave 1 indices for epoch 0, but its len"):
        list(DataLoader(range(4), sampler=Short()))


def test_states_with_and_without_a_sampler_do_not_mix():
    plain = DataLoader(range(6), batch_size=2, shuffle=True, seed=1)
    sampled = DataLoader(range(6), batch_size=2, sampler=RandomSampler(6, seed=1))
    assert "sampler_length" not in plain.state_dict()  # the format of loaders without one
    with pytest.raises(pyburn.ArgumentError,
                       match="state is for no sampler; this loader has a sampler of 6 indices"):
        sampled.load_state_dict(plain.state_dict())
    with pytest.raises(pyburn.ArgumentError, match="a sampler of 6 indices; .* no sampler"):
        plain.load_state_dict(sampled.state_dict())
    fewer = DataLoader(range(6), batch_size=2, sampler=RandomSampler(6, num_samples=4, seed=1))
    with pytest.raises(pyburn.ArgumentError, match="this loader has a sampler of 4 indices"):
        fewer.load_state_dict(sampled.state_dict())
    fixed = DataLoader(range(6), batch_size=2, sampler=SequentialSampler(6))
    with pytest.raises(pyburn.ArgumentError, match="seed 1 but this loader's order is fixed"):
        fixed.load_state_dict(sampled.state_dict())


def run_coroutine(coroutine):
    """Run a coroutine that awaits nothing but ``asyncio.sleep(0)``, with no event loop (a
    running one cannot be entered synchronously under Pyodide): returns its value and the
    number of times it gave the loop its turn."""
    turns = 0
    while True:
        try:
            coroutine.send(None)
        except StopIteration as stop:
            return stop.value, turns
        turns += 1


def test_async_iteration_is_the_same_iteration_and_resumes():
    def make(**kwargs):
        return DataLoader(range(11), batch_size=3, shuffle=True, seed=4, collate=list, **kwargs)

    reference = make()
    epochs = [list(reference) for _ in range(2)]

    async def first_epoch_then_stop(loader):
        first = [batch async for batch in loader]
        done = []
        async for batch in loader:
            done.append(batch)
            if len(done) == 2:
                return first, done, loader.state_dict()

    loader = make(num_workers=2)
    (first, done, state), turns = run_coroutine(first_epoch_then_stop(loader))
    assert first == epochs[0] and done == epochs[1][:2]
    # the loop had its turn after each of the 4 batches of the first epoch and the first of
    # the second; leaving the loop early stopped the threads
    assert turns == 4 + 1
    assert worker_threads() == []

    async def rest(loader):
        return [batch async for batch in loader]

    resumed = make()
    resumed.load_state_dict(state)
    assert run_coroutine(rest(resumed))[0] == epochs[1][2:]
    assert resumed.epoch == 2
