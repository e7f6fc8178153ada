"""pyburn.rl's episode bookkeeping: over a vector of environments that reset themselves, the
episodes found equal those of each environment stepped on its own; the mean of the last
returns; the run folder's events, read back by pyburn.train.runlog and folded by the
dashboard's state as a Learner's run is."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn.rl import CartPole, Episode, EpisodeLog, EpisodeStats, GridWorld, SyncVectorEnv
from pyburn.train import read_events, read_metrics
from pyburn.train.dashboard.state import RunState

SEED, STEPS = 5, 150


def policy(step: int, k: int) -> int:
    """Each environment's action at each vector step: pushes that topple the pole soon."""
    return (step // (3 + k)) % 2


def alone(k: int, num_envs: int) -> list[Episode]:
    """The episodes of environment `k` stepped by itself, stamped with the run's step
    (every environment's steps counted) at which each ended."""
    env = CartPole()
    env.reset(seed=SEED + k)
    found, total, length = [], 0.0, 0
    for step in range(STEPS):
        _, reward, terminated, truncated, _ = env.step(policy(step, k))
        total, length = total + reward, length + 1
        if terminated or truncated:
            found.append(Episode(total, length, (step + 1) * num_envs))
            total, length = 0.0, 0
            env.reset()
    return found


def test_the_episodes_are_each_environments_own():
    envs = SyncVectorEnv([CartPole] * 3)
    envs.reset(seed=SEED)
    stats = EpisodeStats(3)
    for step in range(STEPS):
        _, rewards, terminated, truncated, _ = envs.step([policy(step, k) for k in range(3)])
        ended = stats.update(rewards, terminated, truncated)
        assert len(ended) == sum(a or b for a, b in zip(terminated, truncated))
    expected = sorted((e for k in range(3) for e in alone(k, 3)), key=lambda e: e.step)
    assert len(expected) > 10
    assert sorted(stats.episodes, key=lambda e: (e.step, e.length)) == \
        sorted(expected, key=lambda e: (e.step, e.length))
    assert stats.step == 3 * STEPS
    last = [e.return_ for e in stats.episodes[-7:]]
    assert stats.mean_return(7) == pytest.approx(sum(last) / 7)


def test_returns_are_sums_of_rewards_and_truncations_end_episodes():
    world = GridWorld(rows=1, cols=4, step_reward=-0.5, max_episode_steps=3)
    stats = EpisodeStats(1)
    world.reset(seed=0)
    # 3 steps against the wall (cut), 3 to the goal (+1 on arrival), then 2 more
    for action in (3, 3, 3, 1, 1, 1, 3, 1):
        _, reward, terminated, truncated, _ = world.step(action)
        stats.update([reward], [terminated], [truncated])
        if terminated or truncated:
            world.reset()
    assert stats.episodes == [Episode(-1.5, 3, 3), Episode(0.0, 3, 6)]
    assert stats.returns == [-1.0] and stats.lengths == [2]


def test_mean_return_and_misuse():
    stats = EpisodeStats(2)
    assert math.isnan(stats.mean_return())
    stats.update([2.0, 1.0], [True, True], [False, False])
    stats.update([4.0, 0.0], [False, False], [True, False])
    assert stats.mean_return() == pytest.approx(7 / 3)
    assert stats.mean_return(1) == 4.0
    with pytest.raises(pyburn.ArgumentError, match="positive"):
        stats.mean_return(0)
    with pytest.raises(pyburn.ArgumentError, match="2 environments"):
        stats.update([1.0], [False], [False])
    with pytest.raises(pyburn.ArgumentError, match="positive"):
        EpisodeStats(0)


def test_the_run_folder_reads_back_as_a_learners(tmp_path):
    asked = []

    def extra() -> dict[str, float]:
        asked.append(True)
        return {"epsilon": 0.5}

    log = EpisodeLog(tmp_path, total_steps=8, config={"algorithm": "test"})
    with EpisodeStats(2, log) as stats:
        stats.update([1.0, 1.0], [False, False], [False, False], extra)
        stats.update([1.0, 1.0], [True, False], [False, True], extra)
        stats.update([1.0, 1.0], [False, False], [False, False], extra)
    assert len(asked) == 1  # only when episodes ended
    events = read_events(tmp_path)
    assert [e["event"] for e in events] == ["status", "metrics", "metrics", "status"]
    assert events[0]["state"] == "started" and events[0]["epochs"] == 1
    assert events[-1]["state"] == "ended" and events[-1]["step"] == 6
    metrics = read_metrics(tmp_path)
    assert [m["metrics"] for m in metrics] == [
        {"episode_return": 2.0, "episode_length": 2, "epsilon": 0.5}] * 2
    assert all((m["split"], m["epoch"], m["batch"], m["step"], m["batches"]) ==
               ("train", 1, 4, 4, 8) for m in metrics)
    assert (tmp_path / "run.json").read_text().count('"algorithm": "test"') == 1
    state = RunState()
    for event in events:
        state.apply(event)
    assert state.status == "ended" and state.where.batches == 8
    assert state.series("episode_return") == {"train": [(4, 2.0), (4, 2.0)]}


def test_a_failed_run_says_so(tmp_path):
    with pytest.raises(RuntimeError):
        with EpisodeStats(1, EpisodeLog(tmp_path, 10, {})) as stats:
            stats.update([1.0], [True], [False])
            raise RuntimeError("boom")
    last = read_events(tmp_path)[-1]
    assert (last["state"], last["error"], last["step"]) == ("failed", "RuntimeError: boom", 1)
