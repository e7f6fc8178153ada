"""pyburn.rl: reinforcement learning (burn-rl's counterpart), begun: the environment
protocol (gymnasium's), spaces, CartPole, MountainCar and GridWorld, vectors of
environments, and replay buffers (uniform and prioritized) on any device. Pure Python, so
it runs in Pyodide.

>>> env = make("CartPole-v1")
>>> type(env).__name__, env.max_episode_steps
('CartPole', 500)
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ArgumentError
from .async_vector import AsyncVectorEnv
from .cartpole import CartPole
from .check import check_env
from .env import Env
from .grid_world import GridWorld
from .mountain_car import MountainCar
from .replay import PrioritizedReplayBuffer, PrioritizedTransitions, ReplayBuffer, Transitions
from .spaces import Box, Discrete, Space
from .sum_tree import SumTree
from .vector import SyncVectorEnv

#: the built-in environments by their gymnasium names
REGISTRY: dict[str, Callable[[], Env]] = {"CartPole-v1": CartPole,
                                          "MountainCar-v0": MountainCar}


def make(name: str) -> Env:
    """A built-in environment by its gymnasium name."""
    if name not in REGISTRY:
        raise ArgumentError(f"no environment {name!r}; the built-in ones: "
                            f"{', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]()


__all__ = ["AsyncVectorEnv", "Box", "CartPole", "Discrete", "Env", "GridWorld", "MountainCar",
           "PrioritizedReplayBuffer", "PrioritizedTransitions", "REGISTRY", "ReplayBuffer",
           "Space", "SumTree", "SyncVectorEnv", "Transitions", "check_env", "make"]
