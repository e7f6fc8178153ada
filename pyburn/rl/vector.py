"""Vectors of environments, gymnasium's interface for batches of episodes: `SyncVectorEnv`
steps them one after the other in this process; `AsyncVectorEnv` (``async_vector.py``) each
in a worker process of its own. An environment whose episode ends is reset in the same step:
its row holds the new episode's first observation, and ``info["final_observation"]`` (one
entry per environment, None where it did not end) the last one of the old episode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ArgumentError
from .env import Env

#: one environment's share of a vector step: (observation, reward, terminated, truncated,
#: the old episode's last observation where it ended, else None)
EnvStep = tuple[Any, float, bool, bool, Any]
VectorStep = tuple[list[Any], list[float], list[bool], list[bool], dict[str, Any]]


def autoreset_step(env: Env, action: Any) -> EnvStep:
    """One step of `env`, reset at once where its episode ends."""
    observation, reward, terminated, truncated, _ = env.step(action)
    final = None
    if terminated or truncated:
        final, (observation, _) = observation, env.reset()
    return observation, reward, terminated, truncated, final


def gather(steps: Sequence[EnvStep]) -> VectorStep:
    """The environments' steps as a vector step: a list per field, the final observations in
    the info."""
    observations, rewards, terminated, truncated, finals = (list(f) for f in zip(*steps))
    return observations, rewards, terminated, truncated, {"final_observation": finals}


def check_makers(make_envs: Sequence[Callable[[], Env]], what: str) -> None:
    """Refuse an empty list of environment makers."""
    if not make_envs:
        raise ArgumentError(f"{what} takes at least one environment maker")


def check_actions(actions: Sequence[Any], num_envs: int) -> None:
    """Refuse a number of actions other than one per environment."""
    if len(actions) != num_envs:
        raise ArgumentError(f"{num_envs} environments, {len(actions)} actions")


class SyncVectorEnv:
    """The environments `make_envs` make, one after the other each step."""

    def __init__(self, make_envs: Sequence[Callable[[], Env]]):
        check_makers(make_envs, "SyncVectorEnv")
        self.envs = [make() for make in make_envs]
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space

    def reset(self, seed: int | None = None) -> tuple[list[Any], dict[str, Any]]:
        """Every environment's first observation; environment k is seeded ``seed + k``."""
        observations = [env.reset(seed=None if seed is None else seed + k)[0]
                        for k, env in enumerate(self.envs)]
        return observations, {}

    def step(self, actions: Sequence[Any]) -> VectorStep:
        """One step of every environment (an action each)."""
        check_actions(actions, self.num_envs)
        return gather([autoreset_step(env, action) for env, action in zip(self.envs, actions)])

    def close(self) -> None:
        """Nothing to release (for the interface `AsyncVectorEnv` shares)."""

    def __enter__(self) -> SyncVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
