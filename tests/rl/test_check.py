"""check_env: pyburn's environments and gymnasium's pass; each breach of the protocol is
named."""

from __future__ import annotations

import pytest

from pyburn.errors import ArgumentError
from pyburn.rl import REGISTRY, CartPole, GridWorld, check_env

gymnasium = pytest.importorskip("gymnasium")


@pytest.mark.parametrize("make", [*REGISTRY.values(), lambda: GridWorld(slip=0.2)])
def test_pyburns_environments_pass(make):
    check_env(make())


def test_gymnasiums_environments_pass():
    check_env(gymnasium.make("CartPole-v1"))
    check_env(gymnasium.make("FrozenLake-v1"))


class Careless(CartPole):
    """A CartPole with the breaches of `kind`."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.calls = 0

    def _reset(self, options):
        self.calls += 1
        observation = super()._reset(options)
        if self.kind == "unseeded":  # each reset a little elsewhere, whatever the seed
            return [v + self.calls / 1000 for v in observation]
        return observation

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        if self.kind == "types":
            return observation, str(reward), 1, truncated, None
        if self.kind == "outside":
            return [99.0, 0.0, 0.0, 0.0], reward, terminated, truncated, info
        return observation, reward, terminated, truncated, info


@pytest.mark.parametrize("kind, says", [
    ("types", ["reward must be a number", "must be bools", "info must be a dict"]),
    ("outside", ["not in the observation space"]),
    ("unseeded", ["the seed must fix"]),
])
def test_each_breach_is_named(kind, says):
    with pytest.raises(ArgumentError) as caught:
        check_env(Careless(kind))
    for words in says:
        assert words in str(caught.value)


def test_something_that_is_no_environment_is_refused():
    with pytest.raises(ArgumentError, match="has no observation_space, action_space"):
        check_env(object())
