"""`check_env`: does an environment keep the protocol pyburn.rl's algorithms rely on
(gymnasium's)? It runs a few seeded episodes and raises `ArgumentError` listing every
breach: spaces missing, reset or step returning the wrong things, observations outside the
observation space, or a seed that does not fix the episode. gymnasium's environments pass it
as well as pyburn's own.

>>> from pyburn.rl import make
>>> check_env(make("CartPole-v1"))
"""

from __future__ import annotations

import random
from numbers import Real
from typing import Any

from ..errors import ArgumentError
from .spaces import Space


def _plain(value: Any) -> Any:
    """`value` comparable with ``==`` (a numpy array as nested lists)."""
    return value.tolist() if hasattr(value, "tolist") else value


def _episode(env: Any, seed: int, steps: int, breaches: list[str]) -> list[Any]:
    """The trajectory of a seeded episode under seeded random actions (at most `steps`),
    noting each breach of the protocol in `breaches`."""
    found = env.reset(seed=seed)
    if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[1], dict)):
        breaches.append(f"reset() must return (observation, info dict), got {found!r}")
        return []
    observation, _ = found
    if not env.observation_space.contains(observation):
        breaches.append(f"reset()'s observation {observation!r} is not in the observation "
                        "space")
    trajectory = [_plain(observation)]
    actions = random.Random(seed)
    for _ in range(steps):
        action = (env.action_space.sample(actions) if isinstance(env.action_space, Space)
                  else _draw(env, actions))
        result = env.step(action)
        if not (isinstance(result, tuple) and len(result) == 5):
            breaches.append("step() must return (observation, reward, terminated, truncated, "
                            f"info), got {result!r}")
            return trajectory
        observation, reward, terminated, truncated, info = result
        if not env.observation_space.contains(observation):
            breaches.append(f"step()'s observation {observation!r} is not in the observation "
                            "space")
        if not isinstance(reward, Real) or isinstance(reward, bool):
            breaches.append(f"step()'s reward must be a number, got {reward!r}")
        if not all(isinstance(flag, bool) or type(flag).__name__ == "bool_"
                   for flag in (terminated, truncated)):
            breaches.append(f"step()'s terminated and truncated must be bools, got "
                            f"{terminated!r} and {truncated!r}")
        if not isinstance(info, dict):
            breaches.append(f"step()'s info must be a dict, got {info!r}")
        trajectory.append((_plain(observation), float(reward), bool(terminated),
                           bool(truncated)))
        if breaches or terminated or truncated:
            break
    return trajectory


def _draw(env: Any, actions: random.Random) -> Any:
    """A seeded action from a gymnasium space (seeded through the space itself)."""
    env.action_space.seed(actions.randrange(2**31))
    return env.action_space.sample()


def check_env(env: Any, *, seed: int = 0, steps: int = 200) -> None:
    """Check `env` against the protocol (see the module docstring) over two seeded episodes
    of at most `steps` random actions each; raises `ArgumentError` naming every breach."""
    missing = [name for name in ("observation_space", "action_space", "reset", "step")
               if not hasattr(env, name)]
    if missing:
        raise ArgumentError(f"{type(env).__name__} is not an environment: it has no "
                            f"{', '.join(missing)}")
    breaches: list[str] = []
    first = _episode(env, seed, steps, breaches)
    if not breaches and _episode(env, seed, steps, breaches) != first:
        breaches.append(f"reset(seed={seed}) and the same actions gave another episode: the "
                        "seed must fix the environment's randomness")
    if breaches:
        raise ArgumentError(f"{type(env).__name__} breaks the environment protocol:\n- " +
                            "\n- ".join(dict.fromkeys(breaches)))
