"""Samplers against independent references: PyTorch's DistributedSampler where its order is
fixed, chi-square tests of the random draws (fixed seeds, so they cannot flake), and the
documented Philox stream; and a loader's resumption with any sampler (a hypothesis property).
Desktop only (torch, scipy, hypothesis): the Pyodide run has test_loader.py's sampler tests."""

from __future__ import annotations

import json
import math
from collections import Counter

import pytest
import torch.utils.data
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

import pyburn
from pyburn.data import (
    DataLoader,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    permutation,
)
from pyburn.data import shuffle as shuffle_module
from pyburn.data.shuffle import uniform_floats, uniform_ints
from pyburn.random import random_words

#: below this p-value a chi-square test says the draws do not follow the distribution
P_MIN = 1e-3

DISTRIBUTED_CASES = [(10, 3, False), (10, 3, True), (12, 4, False), (12, 4, True),
                     (2, 4, False), (2, 4, True), (1, 5, False), (7, 1, True), (0, 2, False),
                     (23, 6, False)]


def torch_shares(n, replicas, drop_last, shuffle):
    return [list(torch.utils.data.DistributedSampler(range(n), num_replicas=replicas, rank=r,
                                                     shuffle=shuffle, drop_last=drop_last))
            for r in range(replicas)]


def shares(n, replicas, drop_last, epoch=0, seed=0, shuffle=True):
    return [DistributedSampler(n, replicas, r, shuffle=shuffle, seed=seed,
                               drop_last=drop_last).indices(epoch) for r in range(replicas)]


@pytest.mark.parametrize(("n", "replicas", "drop_last"), DISTRIBUTED_CASES)
def test_distributed_without_shuffle_is_torchs(n, replicas, drop_last):
    ours = shares(n, replicas, drop_last, shuffle=False)
    assert ours == torch_shares(n, replicas, drop_last, shuffle=False)
    assert [len(DistributedSampler(n, replicas, r, shuffle=False, drop_last=drop_last))
            for r in range(replicas)] == [len(s) for s in ours]


def test_distributed_shuffled_shares_have_torchs_structure():
    for n, replicas, drop_last in DISTRIBUTED_CASES:
        ours = shares(n, replicas, drop_last, epoch=3, seed=11)
        theirs = torch_shares(n, replicas, drop_last, shuffle=True)
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        everything = [i for share in ours for i in share]
        assert set(everything) <= set(range(n))
        if drop_last:  # disjoint, the tail left out
            assert len(set(everything)) == len(everything) == replicas * (n // replicas)
        else:  # every index, as evenly as padding by wrapping around makes it
            assert set(everything) == set(range(n))
            assert len(everything) - n == -n % replicas
            counts = set(Counter(everything).values())
            assert counts <= {len(everything) // n, -(-len(everything) // n)} if n else not counts
    # one permutation for every replica: rank r's k-th index is item k * replicas + r of it
    order = permutation(12, 11, 3)
    assert [i for k in range(3) for i in (s[k] for s in shares(12, 4, False, 3, 11))] == order
    assert shares(12, 4, False, epoch=4, seed=11) != shares(12, 4, False, epoch=3, seed=11)
    assert shares(12, 4, False, seed=12) != shares(12, 4, False, seed=11)


def test_uniform_ints_follow_the_documented_rejection(monkeypatch):
    # n = 3 * 2**29 rejects a quarter of the words: the spec, one word at a time
    n, seed = 3 * 2**29, 5
    expected, offset = [], 7
    while len(expected) < 200:
        (word,) = random_words(1, seed, offset)
        offset += 1
        if word * n % 2**32 >= 2**32 % n:
            expected.append(word * n >> 32)
    assert offset > 240  # some were rejected
    assert uniform_ints(200, n, seed, 7) == expected
    monkeypatch.setattr(shuffle_module, "_numpy", lambda: None)
    assert uniform_ints(200, n, seed, 7) == expected


def test_random_sampler_with_replacement_is_uniform():
    draws = RandomSampler(7, replacement=True, num_samples=14_000, seed=3).indices(2)
    counts = Counter(draws)
    assert sorted(counts) == list(range(7))
    assert chisquare([counts[i] for i in range(7)]).pvalue > P_MIN


def test_random_sampler_without_replacement_is_the_permutation():
    sampler = RandomSampler(20, num_samples=8, seed=4)
    assert len(sampler) == 8
    for epoch in range(3):
        assert sampler.indices(epoch) == permutation(20, 4, epoch)[:8]
    assert sorted(RandomSampler(20, seed=4).indices(1)) == list(range(20))


def test_weighted_with_replacement_follows_the_weights():
    weights = [1.0, 0.0, 2.0, 3.0, 4.0]
    draws = WeightedRandomSampler(weights, 20_000, seed=9).indices(0)
    counts = Counter(draws)
    assert counts[1] == 0 and len(draws) == 20_000
    drawn = [0, 2, 3, 4]
    expected = [20_000 * weights[i] / 10 for i in drawn]
    assert chisquare([counts[i] for i in drawn], expected).pvalue > P_MIN


def test_weighted_without_replacement_is_an_urn():
    weights = [5, 1, 0, 2, 2]
    sampler = WeightedRandomSampler(weights, 4, replacement=False, seed=1)
    firsts, seconds = Counter(), Counter()
    for epoch in range(3000):
        drawn = sampler.indices(epoch)
        assert len(set(drawn)) == 4 and 2 not in drawn
        firsts[drawn[0]] += 1
        if drawn[0] == 0:
            seconds[drawn[1]] += 1
    # the first draw follows the weights, the second the weights of those left (here: 0 gone)
    assert chisquare([firsts[i] for i in (0, 1, 3, 4)],
                     [3000 * weights[i] / 10 for i in (0, 1, 3, 4)]).pvalue > P_MIN
    total = sum(seconds.values())
    assert chisquare([seconds[i] for i in (1, 3, 4)],
                     [total * weights[i] / 5 for i in (1, 3, 4)]).pvalue > P_MIN


def test_uniform_floats_are_rands_float64():
    x = pyburn.rand(5, dtype=pyburn.float64, device="flex",
                    generator=pyburn.random.Generator(21))
    assert uniform_floats(5, 21, 0) == x.tolist()


def test_subset_random_sampler_shuffles_the_subset():
    subset = [9, 4, 4, 17, 0]
    sampler = SubsetRandomSampler(subset, seed=6)
    for epoch in range(2):
        assert sampler.indices(epoch) == [subset[j] for j in permutation(5, 6, epoch)]
    assert len(sampler) == 5 and sampler.indices(0) != sampler.indices(1)


def test_sequential_sampler_and_the_protocol():
    assert SequentialSampler(4).indices(9) == [0, 1, 2, 3] and len(SequentialSampler(0)) == 0
    for sampler in (SequentialSampler(3), RandomSampler(3, seed=0),
                    WeightedRandomSampler([1], 1, seed=0), SubsetRandomSampler([1], seed=0),
                    DistributedSampler(3, 2, 1)):
        assert isinstance(sampler, Sampler)
        assert len(sampler.indices(0)) == len(sampler)


def test_unseeded_samplers_follow_manual_seed():
    def draw():
        pyburn.manual_seed(8)
        return [RandomSampler(30).indices(0), SubsetRandomSampler(range(30)).indices(0),
                WeightedRandomSampler([1, 2, 3], 10).indices(0)]

    assert draw() == draw()
    assert RandomSampler(30).indices(0) != RandomSampler(30).indices(0)


def test_samplers_give_the_same_indices_without_numpy(monkeypatch):
    def draw():
        return [RandomSampler(50, replacement=True, num_samples=40, seed=2).indices(1),
                WeightedRandomSampler(range(1, 30), 40, seed=2).indices(1),
                WeightedRandomSampler(range(1, 30), 20, replacement=False, seed=2).indices(1),
                DistributedSampler(50, 3, 2, seed=2).indices(1)]

    with_numpy = draw()
    monkeypatch.setattr(shuffle_module, "_numpy", lambda: None)
    assert draw() == with_numpy


@pytest.mark.parametrize(("make", "match"), [
    (lambda: SequentialSampler(-1), "n must be an int >= 0"),
    (lambda: RandomSampler(3, num_samples=4), "at most n=3"),
    (lambda: RandomSampler(0, replacement=True, num_samples=1), "n=0"),
    (lambda: RandomSampler(3, seed=1.0), "seed must be an int or None"),
    (lambda: RandomSampler(2**31 + 1), "at most 2147483648"),
    (lambda: WeightedRandomSampler([1, -1], 2), "weight 1 must be a finite number >= 0"),
    (lambda: WeightedRandomSampler([1, math.nan], 2), "weight 1"),
    (lambda: WeightedRandomSampler(["1"], 2), "weight 0"),
    (lambda: WeightedRandomSampler([0, 0], 2), "a weight above 0"),
    (lambda: WeightedRandomSampler([1, 0, 1], 3, replacement=False), "at most the 2 indices"),
    (lambda: SubsetRandomSampler([1, -2]), "index must be an int >= 0"),
    (lambda: DistributedSampler(5, 0, 0), "num_replicas must be an int >= 1"),
    (lambda: DistributedSampler(5, 2, 2), "rank must be below num_replicas=2"),
    (lambda: DistributedSampler(5, 2, 0, seed=None), "same int seed"),
    (lambda: RandomSampler(3, seed=0).indices(-1), "RandomSampler epoch must be an int >= 0"),
])
def test_bad_sampler_arguments(make, match):
    with pytest.raises(pyburn.ArgumentError, match=match):
        make()


#: the loader's own orders and one loader per sampler, each (but the distributed one, whose
#: seed every replica must share) unseeded: the resumed loader must put the saved seed back
LOADER_KINDS = {
    "sequential": lambda n: {},
    "shuffle": lambda n: {"shuffle": True},
    "random": lambda n: {"sampler": RandomSampler(n, replacement=True, num_samples=n + 3)},
    "weighted": lambda n: {"sampler": WeightedRandomSampler(range(1, n + 1), n,
                                                            replacement=False)},
    "subset": lambda n: {"sampler": SubsetRandomSampler(range(0, n, 2))},
    "distributed": lambda n: {"sampler": DistributedSampler(n, 3, 1, seed=7)},
}


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 25), batch_size=st.integers(1, 6), drop_last=st.booleans(),
       kind=st.sampled_from(sorted(LOADER_KINDS)), epoch=st.integers(0, 3),
       stop=st.integers(0, 12))
def test_a_restored_loader_yields_exactly_the_remaining_batches(n, batch_size, drop_last, kind,
                                                               epoch, stop):
    def make():
        return DataLoader(list(range(100, 100 + n)), batch_size=batch_size, drop_last=drop_last,
                          collate=list, **LOADER_KINDS[kind](n))

    run = make()
    run.set_epoch(epoch)
    expected = list(run)
    stop = min(stop, len(expected))
    run.set_epoch(epoch)
    state = run.state_dict()
    for seen, _ in enumerate(run, 1):
        if seen == stop:
            state = run.state_dict()
            break
    resumed = make()
    resumed.load_state_dict(json.loads(json.dumps(state)))
    assert list(resumed) == expected[stop:]
    assert resumed.epoch == epoch + 1
