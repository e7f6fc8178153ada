"""pyburn.rl: reinforcement learning (burn-rl's counterpart), begun: the environment
protocol (gymnasium's), spaces, CartPole, and vectors of environments. Pure Python, so it
runs in Pyodide.

>>> env = make("CartPole-v1")
>>> type(env).__name__, env.max_episode_steps
('CartPole', 500)
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ArgumentError
from .cartpole import CartPole
from .env import Env
from .spaces import Box, Discrete, Space
from .vector import SyncVectorEnv

#: the built-in environments by their gymnasium names
REGISTRY: dict[str, Callable[[], Env]] = {"CartPole-v1": CartPole}


def make(name: str) -> Env:
    """A built-in environment by its gymnasium name."""
    if name not in REGISTRY:
        raise ArgumentError(f"no environment {name!r}; the built-in ones: "
                            f"{', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]()


__all__ = ["Box", "CartPole", "Discrete", "Env", "REGISTRY", "Space", "SyncVectorEnv", "make"]
