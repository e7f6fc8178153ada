"""pyburn.rl: reinforcement learning (burn-rl's counterpart), begun: the environment
protocol (gymnasium's), spaces, CartPole, MountainCar and GridWorld, vectors of
environments, replay buffers (uniform and prioritized) on any device, episode statistics
logged as a Learner's run, and two agents: DQN (double Q-learning) and PPO. Pure Python, so
it runs in Pyodide.

>>> env = make("CartPole-v1")
>>> type(env).__name__, env.max_episode_steps
('CartPole', 500)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ArgumentError
from .async_vector import AsyncVectorEnv
from .cartpole import CartPole
from .check import check_env
from .dqn import DQNConfig, DQNResult, dqn_training, td_targets, train_dqn
from .env import Env
from .episodes import Episode, EpisodeLog, EpisodeStats, EventSink
from .grid_world import GridWorld
from .mountain_car import MountainCar
from .networks import mlp
from .policy import ActorCritic, log_prob_and_entropy, sample_actions
from .ppo import PPOConfig, PPOLoss, PPOResult, gae, ppo_loss, ppo_training, train_ppo
from .replay import PrioritizedReplayBuffer, PrioritizedTransitions, ReplayBuffer, Transitions
from .spaces import Box, Discrete, Space
from .sum_tree import SumTree
from .vector import SyncVectorEnv

#: the built-in environments by their gymnasium names
REGISTRY: dict[str, Callable[[], Env]] = {"CartPole-v1": CartPole,
                                          "MountainCar-v0": MountainCar}


def make(name: str) -> Any:
    """An environment by its gymnasium name: a built-in one, else gymnasium's own where
    gymnasium is installed (its environments keep the same protocol)."""
    if name in REGISTRY:
        return REGISTRY[name]()
    try:
        import gymnasium  # optional: gymnasium, for the environments pyburn does not build in
    except ImportError:
        raise ArgumentError(f"no environment {name!r}; the built-in ones: "
                            f"{', '.join(sorted(REGISTRY))} (pip install gymnasium for "
                            "gymnasium's)") from None
    try:
        return gymnasium.make(name)
    except gymnasium.error.Error as exc:
        raise ArgumentError(f"no environment {name!r}, built in or in gymnasium ({exc})") \
            from None


__all__ = ["ActorCritic", "AsyncVectorEnv", "Box", "CartPole", "DQNConfig", "DQNResult",
           "Discrete", "Env", "Episode", "EpisodeLog", "EpisodeStats", "EventSink",
           "GridWorld", "MountainCar", "PPOConfig", "PPOLoss", "PPOResult",
           "PrioritizedReplayBuffer", "PrioritizedTransitions", "REGISTRY",
           "ReplayBuffer", "Space", "SumTree", "SyncVectorEnv", "Transitions",
           "check_env", "dqn_training", "gae", "log_prob_and_entropy", "make", "mlp",
           "ppo_loss", "ppo_training", "sample_actions", "td_targets", "train_dqn",
           "train_ppo"]
