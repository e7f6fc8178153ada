"""Deep Q-learning (Mnih et al., 2015, "Human-level control through deep reinforcement
learning") with double Q-learning's targets (van Hasselt et al., 2016): `train_dqn` trains a
Q network on a vector of environments with discrete actions.

Each step, every environment acts epsilon-greedily on one forward pass of the Q network
(whether to explore, and the random action, drawn on the device from the run's generator)
and its transition goes into a `ReplayBuffer` on the training device (an episode cut short
by its time limit is stored as not done, so that its value is bootstrapped). After
`DQNConfig.learning_starts` steps, every `train_frequency` steps `gradient_steps`
minibatches are sampled, and on each the Huber loss between ``Q(s, a)`` and the target ``r
+ gamma * Q'(s', a*)`` (just ``r`` past a termination) takes one Adam step, its gradients
clipped. ``Q'`` is the target network, a copy of the Q network updated every
`target_update_interval` steps (a hard copy, or Polyak averaging with ``tau < 1``). Double
Q-learning picks ``a*`` with the Q network and values it with the target network; without
it ``a*`` maximises ``Q'``.

Steps count every environment's steps: a vector step of 4 environments is 4 steps.

>>> from pyburn.rl import CartPole
>>> config = DQNConfig(learning_starts=50, batch_size=16)
>>> result = train_dqn(CartPole, config, total_steps=100, seed=0, device="flex")
>>> result.stats.step, result.q_network[-1].out_features
(100, 2)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from collections.abc import Generator as Run
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._tensor import Tensor
from ..devices import Device
from ..errors import ArgumentError
from ..nn import Module, ReLU
from ..nn import functional as F
from ..ops.creation import DeviceLike
from ..ops.math_ops import where
from ..ops.random_tensors import rand, randint
from ..optim import Adam
from ..optim.clip import clip_grad_norm_
from ..random import Generator
from ..tape import no_grad
from .env import Env
from .episodes import EpisodeStats
from .networks import mlp
from .replay import ReplayBuffer
from .training import (
    Progress,
    RunTarget,
    check_fields,
    check_run,
    child_seed,
    discrete_envs,
    episode_stats,
    finish,
    observation_batch,
    plain,
    training_device,
)


@dataclass(frozen=True)
class DQNConfig:
    """DQN's hyperparameters; the defaults solve CartPole-v1 (docs/rl.md has the numbers)."""

    #: Adam's learning rate
    learning_rate: float = 1e-3
    #: the discount
    gamma: float = 0.99
    #: transitions the replay buffer keeps
    buffer_size: int = 50_000
    #: transitions per gradient step
    batch_size: int = 128
    #: steps of acting before the first gradient step
    learning_starts: int = 1_000
    #: steps between two rounds of training, and the gradient steps of a round
    train_frequency: int = 4
    gradient_steps: int = 1
    #: steps between two updates of the target network
    target_update_interval: int = 500
    #: the Q network's share in each target update (1: a hard copy)
    tau: float = 1.0
    #: epsilon falls linearly from its start to its end over `exploration_fraction` of the
    #: run's steps, and stays at its end afterwards
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    exploration_fraction: float = 0.1
    #: double Q-learning's targets (van Hasselt et al., 2016)
    double_q: bool = True
    #: the gradients' total norm is clipped to this (None: no clipping)
    max_grad_norm: float | None = 10.0
    #: the hidden layers' widths of the default Q network
    hidden: tuple[int, ...] = (128, 128)

    def __post_init__(self) -> None:
        check_fields(self, counts=("buffer_size", "batch_size", "train_frequency",
                                   "gradient_steps", "target_update_interval"),
                     positive=("learning_rate", "tau"),
                     fractions=("gamma", "tau", "epsilon_start", "epsilon_end",
                                "exploration_fraction"))
        if isinstance(self.learning_starts, bool) or not isinstance(self.learning_starts, int) \
                or self.learning_starts < 0:
            raise ArgumentError(f"DQNConfig.learning_starts must be an int >= 0, got "
                                f"{self.learning_starts!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ArgumentError(f"DQNConfig.max_grad_norm must be positive or None, got "
                                f"{self.max_grad_norm!r}")

    def epsilon(self, step: int, total_steps: int) -> float:
        """The probability of a random action at `step` of a run of `total_steps`."""
        span = self.exploration_fraction * total_steps
        if step >= span:
            return self.epsilon_end
        return self.epsilon_start + step / span * (self.epsilon_end - self.epsilon_start)


class DQNResult(NamedTuple):
    """What `train_dqn` gives: the trained Q network (observations (batch, size) to action
    values (batch, actions), on the training device) and the run's episodes."""

    q_network: Module
    stats: EpisodeStats


def td_targets(rewards: Tensor, dones: Tensor, next_q_target: Tensor, gamma: float,
               next_q_online: Tensor | None = None) -> Tensor:
    """Q-learning's targets ``r + gamma * Q'(s', a*)``, just ``r`` where `dones`: `rewards`
    and `dones` (batch,), the target network's values of the next states `next_q_target`
    (batch, actions). With `next_q_online` (the online network's values of the same states)
    ``a*`` is its argmax (double Q-learning), else the argmax of `next_q_target`."""
    if next_q_online is None:
        next_values = next_q_target.amax(-1)
    else:
        best = next_q_online.argmax(-1, keepdim=True)
        next_values = next_q_target.gather(-1, best).squeeze(-1)
    return rewards + gamma * where(dones, 0.0, next_values)


class _Agent:
    """The Q network, its target copy, the optimizer and the replay buffer of a run."""

    def __init__(self, q_network: Module, config: DQNConfig, observation_size: int,
                 device: Device, generator: Generator):
        self.online = q_network.to(device)
        self.target = copy.deepcopy(self.online)
        self.config, self.device, self.generator = config, device, generator
        self.optimizer = Adam(self.online.parameters(), lr=config.learning_rate)
        self.buffer = ReplayBuffer(config.buffer_size, observation_size, action_dtype="int32",
                                   device=device, seed=child_seed(generator))

    def act(self, observations: Sequence[Any], epsilon: float) -> list[int]:
        """An action per environment: greedy, or with probability `epsilon` uniform."""
        with no_grad():
            values = self.online(observation_batch(observations, self.device))
            count, actions = values.shape
            explore = rand(count, device=self.device, generator=self.generator) < epsilon
            uniform = randint(0, actions, (count,), device=self.device, generator=self.generator)
            return where(explore, uniform, values.argmax(-1)).tolist()

    def train_step(self) -> Tensor:
        """One gradient step on a sampled minibatch; its loss."""
        config = self.config
        batch = self.buffer.sample(config.batch_size)
        with no_grad():
            next_online = self.online(batch.next_observations) if config.double_q else None
            targets = td_targets(batch.rewards, batch.dones, self.target(batch.next_observations),
                                 config.gamma, next_online)
        values = self.online(batch.observations)
        chosen = values.gather(-1, batch.actions.unsqueeze(-1)).squeeze(-1)
        loss = F.smooth_l1_loss(chosen, targets)
        self.optimizer.zero_grad()
        loss.backward()
        if config.max_grad_norm is not None:
            clip_grad_norm_(self.online.parameters(), config.max_grad_norm)
        self.optimizer.step()
        return loss.detach()

    def update_target(self) -> None:
        """Move the target network towards the Q network by `tau` (1: copy it)."""
        tau = self.config.tau
        with no_grad():
            old = self.target.state_dict()
            self.target.load_state_dict({
                name: value if tau == 1.0 else tau * value + (1.0 - tau) * old[name]
                for name, value in self.online.state_dict().items()})


def _due(before: int, after: int, every: int, start: int) -> int:
    """How many multiples of `every` lie in ``(max(before, start), after]``: the events
    (training rounds, target updates) a vector step from `before` to `after` steps brings."""
    return max(0, after // every - max(before, start) // every)


def train_dqn(make_env: Callable[[], Env], config: DQNConfig | None = None, *,
              total_steps: int, seed: int, device: DeviceLike = None, num_envs: int = 1,
              q_network: Module | None = None, run_dir: RunTarget = None,
              progress: Progress | None = None) -> DQNResult:
    """Train a Q network by DQN (`dqn_training` run to its end; the arguments are its)."""
    return finish(dqn_training(make_env, config, total_steps=total_steps, seed=seed,
                               device=device, num_envs=num_envs, q_network=q_network,
                               run_dir=run_dir, progress=progress))


def dqn_training(make_env: Callable[[], Env], config: DQNConfig | None = None, *,
                 total_steps: int, seed: int, device: DeviceLike = None, num_envs: int = 1,
                 q_network: Module | None = None, run_dir: RunTarget = None,
                 progress: Progress | None = None) -> Run[DQNResult, None, DQNResult]:
    """DQN's run one vector step at a time: a generator that yields the Q network and the
    statistics after each step of the environments (and the learning it brought) and
    returns them at the end, so that its caller may do other work in between; closing it
    stops the run (logged as "stopped").

    It trains a Q network for `total_steps` environment steps (rounded up to whole vector
    steps) on `num_envs` copies of ``make_env()`` (flat box observations, discrete actions:
    pyburn's spaces or gymnasium's).

    - `config`: the hyperparameters (default ``DQNConfig()``);
    - `seed` fixes the run on a given device: the environments (environment ``k`` is reset
      with ``seed + k``), the default network's weights, exploration and the replay
      buffer's samples;
    - `device`: where to train (its autodiff form; default: the default device);
    - `q_network`: a module mapping observations (batch, size) to action values (batch,
      actions), moved to the training device; default: an MLP of `DQNConfig.hidden`
      ReLU layers (`networks.mlp`);
    - `run_dir`: a folder to log the run into (``run.json``, ``events.jsonl``: see
      `pyburn.rl.episodes`), or an `EventSink`; the episodes' metrics add ``epsilon`` and
      the latest ``loss``;
    - `progress`: called with the `EpisodeStats` whenever an episode ends; a true result
      stops the run there.
    """
    config = DQNConfig() if config is None else config
    check_run(total_steps, seed)
    envs, observation_size, actions = discrete_envs(make_env, num_envs)
    dev = training_device(device)
    generator = Generator(seed)
    if q_network is None:
        q_network = mlp([observation_size, *config.hidden, actions], ReLU, output_gain=1.0,
                        device=dev, generator=generator)
    agent = _Agent(q_network, config, observation_size, dev, generator)
    stats = episode_stats("DQN", envs, run_dir, total_steps, total_steps, seed, dev, config)
    loss: Tensor | None = None

    def metrics() -> dict[str, float]:
        return {"epsilon": epsilon, **({} if loss is None else {"loss": loss.item()})}

    observations = plain(envs.reset(seed=seed)[0])
    with stats:
        while stats.step < total_steps:
            epsilon = config.epsilon(stats.step, total_steps)
            chosen = agent.act(observations, epsilon)
            after, rewards, terminated, truncated, info = envs.step(chosen)
            after = plain(after)
            # where an episode ended, its transition leads to its last observation
            ends = [o if last is None else last
                    for o, last in zip(after, plain(info["final_observation"]))]
            agent.buffer.add_batch(observations, chosen, rewards, ends, terminated)
            observations, before = after, stats.step
            finished = stats.update(rewards, terminated, truncated, metrics)
            rounds = _due(before, stats.step, config.train_frequency, config.learning_starts)
            for _ in range(rounds * config.gradient_steps):
                loss = agent.train_step()
            if _due(before, stats.step, config.target_update_interval, config.learning_starts):
                agent.update_target()
            if finished and progress is not None and progress(stats):
                break
            yield DQNResult(agent.online, stats)
    return DQNResult(agent.online, stats)
