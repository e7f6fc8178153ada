"""What the agents' training loops (`train_dqn`, `train_ppo`) share: their arguments checked,
the vector of environments, the training device, seeds for their parts and the episode
statistics with the run folder's log."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from collections.abc import Generator as Run
from numbers import Integral
from typing import Any, TypeVar

from .._tensor import Tensor
from ..devices import Device, default_device
from ..devices import device as as_device
from ..dtypes import float32
from ..errors import ArgumentError
from ..ops.creation import DeviceLike, tensor
from ..random import Generator, random_words
from .env import Env
from .episodes import EpisodeLog, EpisodeStats, EventSink
from .vector import SyncVectorEnv

#: called with the statistics whenever an episode ends; a true result stops the run
Progress = Callable[[EpisodeStats], Any]
R = TypeVar("R")
#: where a run's records go: a run folder, an `EventSink`, or nowhere
RunTarget = str | os.PathLike[str] | EventSink | None


def finish(run: Run[Any, None, R]) -> R:
    """Run a training generator (`ppo_training`, `dqn_training`) to its end; its result."""
    while True:
        try:
            next(run)
        except StopIteration as done:
            return done.value


def check_fields(config: Any, counts: Sequence[str] = (), positive: Sequence[str] = (),
                 fractions: Sequence[str] = ()) -> None:
    """Raise `ArgumentError` for the first field of `config` out of range: `counts` must be
    positive ints, `positive` numbers above 0 and `fractions` numbers in [0, 1]."""
    kind = type(config).__name__
    for name in counts:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ArgumentError(f"{kind}.{name} must be a positive int, got {value!r}")
    for name in positive:
        value = getattr(config, name)
        if not value > 0:
            raise ArgumentError(f"{kind}.{name} must be positive, got {value!r}")
    for name in fractions:
        value = getattr(config, name)
        if not 0.0 <= value <= 1.0:
            raise ArgumentError(f"{kind}.{name} must be in [0, 1], got {value!r}")


def check_run(total_steps: int, seed: int) -> None:
    """Refuse a run length that is not a positive int, or a seed that is not an int."""
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
        raise ArgumentError(f"total_steps must be a positive int, got {total_steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"seed must be an int, got {seed!r}")


def discrete_envs(make_env: Callable[[], Env], num_envs: int) -> tuple[SyncVectorEnv, int, int]:
    """`num_envs` environments from `make_env`, with the size of their observations (a flat
    box) and the number of their actions (a discrete space): pyburn's `Box` and `Discrete`,
    or gymnasium's, whose environments plug in as they are."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ArgumentError(f"num_envs must be a positive int, got {num_envs!r}")
    envs = SyncVectorEnv([make_env] * num_envs)
    observations: Any = envs.single_observation_space
    actions: Any = envs.single_action_space  # pyburn's spaces or gymnasium's
    shape = getattr(observations, "shape", None)
    if shape is None or len(shape) != 1 or not isinstance(getattr(actions, "n", None), Integral):
        raise ArgumentError(f"the agents take observations in a flat box and actions in a "
                            f"discrete space, got {observations} and {actions}")
    return envs, int(shape[0]), int(actions.n)


def training_device(device: DeviceLike) -> Device:
    """The autodiff form of `device` (None: the default device)."""
    base = default_device() if device is None else as_device(device)
    return base if base.is_autodiff else base.autodiff()


def child_seed(generator: Generator) -> int:
    """A 64-bit seed from `generator`'s stream: a part of the run (the replay buffer, the
    minibatch order) gets its own stream, independent of the others."""
    high, low = random_words(2, *generator.take(2))
    return (high << 32) | low


def episode_stats(algorithm: str, envs: SyncVectorEnv, run_dir: RunTarget, total_steps: int,
                  logged_steps: int, seed: int, device: Device, config: Any) -> EpisodeStats:
    """The statistics of a run of `algorithm` on `envs`, logged into `run_dir` (a folder or
    an `EventSink`) when it is given: its ``run.json`` holds the run's arguments and
    `config` (a dataclass), and its episodes' events count `logged_steps` in all (the
    requested `total_steps`, rounded up to what the algorithm takes whole)."""
    log = None if run_dir is None else EpisodeLog(run_dir, logged_steps, {
        "algorithm": algorithm, "environment": type(envs.envs[0]).__name__, "seed": seed,
        "total_steps": total_steps, "num_envs": envs.num_envs, "device": device.name,
        "config": dataclasses.asdict(config)})
    return EpisodeStats(envs.num_envs, log)


def plain(observations: Sequence[Any]) -> list[Any]:
    """A vector environment's observations as lists (gymnasium's environments give numpy
    arrays; None, for an episode that did not end, stays None)."""
    return [o.tolist() if hasattr(o, "tolist") else o for o in observations]


def observation_batch(observations: Sequence[Any], device: Device) -> Tensor:
    """A vector environment's observations as one float32 tensor of rows on `device`."""
    return tensor(plain(observations), dtype=float32, device=device)
