"""`SyncVectorEnv`: several environments stepped together in one process, gymnasium's
interface for batches of episodes. An environment whose episode ends is reset in the same
step: its row holds the new episode's first observation, and ``info["final_observation"]``
(one entry per environment, None where it did not end) the last one of the old episode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ArgumentError
from .env import Env


class SyncVectorEnv:
    """The environments `make_envs` make, one after the other each step."""

    def __init__(self, make_envs: Sequence[Callable[[], Env]]):
        if not make_envs:
            raise ArgumentError("SyncVectorEnv takes at least one environment maker")
        self.envs = [make() for make in make_envs]
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space

    def reset(self, seed: int | None = None) -> tuple[list[Any], dict[str, Any]]:
        """Every environment's first observation; environment k is seeded ``seed + k``."""
        observations = [env.reset(seed=None if seed is None else seed + k)[0]
                        for k, env in enumerate(self.envs)]
        return observations, {}

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], list[float], list[bool],
                                                    list[bool], dict[str, Any]]:
        """One step of every environment (an action each)."""
        if len(actions) != self.num_envs:
            raise ArgumentError(f"{self.num_envs} environments, {len(actions)} actions")
        observations, rewards, terminated, truncated = [], [], [], []
        finals: list[Any] = []
        for env, action in zip(self.envs, actions):
            observation, reward, ended, cut, _ = env.step(action)
            finals.append(observation if ended or cut else None)
            if ended or cut:
                observation, _ = env.reset()
            observations.append(observation)
            rewards.append(reward)
            terminated.append(ended)
            truncated.append(cut)
        return observations, rewards, terminated, truncated, {"final_observation": finals}
