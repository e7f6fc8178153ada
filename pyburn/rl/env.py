"""`Env`, the environment protocol, gymnasium's: ``reset(seed)`` gives (observation, info);
``step(action)`` gives (observation, reward, terminated, truncated, info); `observation_space`
and `action_space` say what they are. `max_episode_steps` truncates an episode (gymnasium's
TimeLimit, built in). An environment keeps its own `random.Random`, seeded by ``reset``."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any

from ..errors import ArgumentError
from .spaces import Space

Step = tuple[Any, float, bool, bool, dict[str, Any]]


class Env(ABC):
    """Subclasses set the spaces and `max_episode_steps`, and write `_reset` and `_step`."""

    observation_space: Space
    action_space: Space
    #: steps after which an episode is truncated (None: never)
    max_episode_steps: int | None = None

    def __init__(self) -> None:
        self.rng = random.Random()
        self.elapsed = 0
        self._started = False

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode: a new seed reseeds the environment's generator."""
        if seed is not None:
            self.rng.seed(seed)
        self.elapsed, self._started = 0, True
        return self._reset(options or {}), {}

    def step(self, action: Any) -> Step:
        """One step of the episode."""
        if not self._started:
            raise ArgumentError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ArgumentError(f"{action!r} is not in the action space {self.action_space}")
        observation, reward, terminated, info = self._step(action)
        self.elapsed += 1
        truncated = (self.max_episode_steps is not None and
                     self.elapsed >= self.max_episode_steps and not terminated)
        return observation, reward, terminated, truncated, info

    @abstractmethod
    def _reset(self, options: dict[str, Any]) -> Any:
        """Set the first state of an episode; its observation."""

    @abstractmethod
    def _step(self, action: Any) -> tuple[Any, float, bool, dict[str, Any]]:
        """One step: (observation, reward, terminated, info)."""
