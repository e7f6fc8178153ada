"""pyburn.rl's CartPole against gymnasium's CartPole-v1: from the same states, the same
actions give the same observations, rewards, terminations and truncations over 1,000 steps
(episodes restarted from gymnasium's seeded resets); the spaces, the vector of environments
and misuse."""

from __future__ import annotations

import random

import pytest

import pyburn
from pyburn.rl import CartPole, SyncVectorEnv, make

gymnasium = pytest.importorskip("gymnasium")

STEPS = 1000


def test_the_dynamics_equal_gymnasiums_over_a_thousand_steps():
    theirs = gymnasium.make("CartPole-v1")
    ours = make("CartPole-v1")
    actions = random.Random(0)
    episodes, seed = 0, 0
    observation, _ = theirs.reset(seed=seed)
    mine, _ = ours.reset(options={"state": theirs.unwrapped.state.tolist()})
    for _ in range(STEPS):
        action = actions.randrange(2)
        observation, reward, terminated, truncated, _ = theirs.step(action)
        got, my_reward, my_terminated, my_truncated, _ = ours.step(action)
        assert got == pytest.approx(observation.astype(float).tolist(), rel=1e-6, abs=1e-7)
        assert list(ours.state) == pytest.approx(theirs.unwrapped.state.tolist(), rel=1e-12,
                                                 abs=1e-12)
        assert (my_reward, my_terminated, my_truncated) == (reward, terminated, truncated)
        if terminated or truncated:
            episodes, seed = episodes + 1, seed + 1
            theirs.reset(seed=seed)
            ours.reset(options={"state": theirs.unwrapped.state.tolist()})
    assert episodes > 10  # random actions end many episodes


def test_a_balancing_policy_is_truncated_at_500_steps():
    env = CartPole()
    observation, _ = env.reset(seed=3)
    step = 0
    while True:
        step += 1
        x, x_dot, theta, theta_dot = observation
        action = int(theta + 0.5 * theta_dot + 0.01 * x + 0.1 * x_dot > 0)
        observation, _, terminated, truncated, _ = env.step(action)
        assert not terminated and step <= 500
        if truncated:
            break
    assert step == 500


def test_seeds_spaces_and_vectors():
    env = CartPole()
    first, _ = env.reset(seed=7)
    assert env.reset(seed=7)[0] == first and env.reset(seed=8)[0] != first
    assert env.observation_space.contains(first) and all(abs(v) <= 0.05 for v in first)
    vector = SyncVectorEnv([CartPole] * 3)
    observations, _ = vector.reset(seed=7)
    assert observations[0] == first and len(observations) == 3
    ended = [0, 0, 0]
    for _ in range(60):  # pushing one way all along: the pole falls within a few dozen steps
        observations, rewards, terminated, truncated, info = vector.step([1, 1, 0])
        assert rewards == [1.0] * 3
        for k in range(3):
            assert (info["final_observation"][k] is not None) == terminated[k]
            if terminated[k]:
                ended[k] += 1
                assert all(abs(v) <= 0.05 for v in observations[k])  # a new episode
    assert all(count >= 1 for count in ended)


def test_misuse_is_refused():
    env = CartPole()
    with pytest.raises(pyburn.PyburnError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(pyburn.PyburnError, match="action space"):
        env.step(2)
    with pytest.raises(pyburn.PyburnError, match="'Pong-v5', built in or in gymnasium"):
        make("Pong-v5")
