"""`pyburn.kernel.autotune`: each choice timed once per argument signature and device, the
fastest kept, in memory and on disk for the next process (the timer is replaced here: tests
never assert timings)."""

from __future__ import annotations

import json

import pytest

import pyburn
from pyburn.kernel import KernelError, autotune, tune


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYBURN_DATA", str(tmp_path))
    return tmp_path / "autotune.json"


def _timed_by_tile(monkeypatch, cost: dict[int, float]) -> list[int]:
    """Make each timing of a call cost `cost[tile]` seconds; returns the tiles timed."""
    timed: list[int] = []

    def seconds(fn):
        result = fn()
        timed.append(result.shape[0])
        return cost[result.shape[0]]

    monkeypatch.setattr(tune, "seconds", seconds)
    return timed


def test_the_fastest_choice_is_picked_once_and_kept(cache, monkeypatch):
    timed = _timed_by_tile(monkeypatch, {4: 3.0, 8: 1.0, 16: 2.0})

    @autotune(tile=[4, 8, 16])
    def run(x, tile):
        return pyburn.zeros(tile, device=x.device) + x.sum()

    x = pyburn.ones(3, device="flex")
    assert run(x).shape == (8,)
    assert sorted(timed) == [4, 8, 16]
    assert run(x).shape == (8,) and len(timed) == 3  # kept: no timing again
    run(pyburn.ones(5, device="flex"))  # another signature: timed again
    assert len(timed) == 6
    stored = json.loads(cache.read_text())
    assert sorted(p["tile"] for p in stored.values()) == [8, 8]

    @autotune(tile=[4, 8, 16])
    def run(x, tile):  # the same function in a new process: the disk has its pick
        return pyburn.zeros(tile, device=x.device) + x.sum()

    assert run(x).shape == (8,) and len(timed) == 6


def test_bad_choices_and_arguments():
    with pytest.raises(KernelError, match="non-empty list"):
        autotune(tile=[])

    @autotune(tile=[1])
    def same(x, tile):
        return x

    with pytest.raises(KernelError, match="tile is picked by autotune"):
        same(pyburn.ones(1, device="flex"), tile=2)
