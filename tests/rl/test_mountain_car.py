"""pyburn.rl's MountainCar against gymnasium's MountainCar-v0: from the same states, the same
actions give the same observations, rewards, terminations and truncations over 1,000 steps
(episodes restarted from gymnasium's seeded resets); the left wall, the spaces and misuse."""

from __future__ import annotations

import random

import pytest

import pyburn
from pyburn.rl import MountainCar, make

gymnasium = pytest.importorskip("gymnasium")

STEPS = 1000


def state_of(env) -> list[float]:
    """Gymnasium's state (an array after reset, a tuple of numpy floats after a step)."""
    return [float(v) for v in env.unwrapped.state]


def test_the_dynamics_equal_gymnasiums_over_a_thousand_steps():
    theirs = gymnasium.make("MountainCar-v0")
    ours = make("MountainCar-v0")
    actions = random.Random(0)
    seed, ends = 0, {"terminated": 0, "truncated": 0}
    theirs.reset(seed=seed)
    ours.reset(options={"state": state_of(theirs)})
    for _ in range(STEPS):
        # random actions never reach the goal: mostly push along the velocity (which
        # pumps energy into the swing), sometimes at random, so that episodes end both ways
        velocity = ours.state[1]
        action = actions.randrange(3) if actions.random() < 0.3 else 2 if velocity >= 0 else 0
        observation, reward, terminated, truncated, _ = theirs.step(action)
        got, my_reward, my_terminated, my_truncated, _ = ours.step(action)
        assert got == pytest.approx(observation.astype(float).tolist(), rel=1e-6, abs=1e-7)
        assert list(ours.state) == pytest.approx(state_of(theirs), rel=1e-12,
                                                 abs=1e-12)
        assert (my_reward, my_terminated, my_truncated) == (reward, terminated, truncated)
        if terminated or truncated:
            ends["terminated" if terminated else "truncated"] += 1
            seed += 1
            theirs.reset(seed=seed)
            ours.reset(options={"state": state_of(theirs)})
    assert ends["terminated"] >= 3 and ends["truncated"] >= 1


def test_the_left_wall_stops_the_car_and_idling_is_truncated_at_200_steps():
    env = MountainCar()
    observation, _ = env.reset(options={"state": [-1.19, -0.05]})
    observation, reward, terminated, truncated, _ = env.step(0)
    assert observation == [-1.2, 0.0] and (reward, terminated, truncated) == (-1.0, False, False)
    env.reset(seed=0)
    steps = 1
    while not env.step(1)[3]:
        steps += 1
    assert steps == 200


def test_seeds_spaces_and_misuse():
    env = MountainCar()
    first, _ = env.reset(seed=7)
    assert env.reset(seed=7)[0] == first and env.reset(seed=8)[0] != first
    assert -0.6 <= first[0] <= -0.4 and first[1] == 0.0 and env.observation_space.contains(first)
    with pytest.raises(pyburn.PyburnError, match="action space"):
        env.step(3)
    with pytest.raises(pyburn.PyburnError, match="position, velocity"):
        env.reset(options={"state": [0.0]})
