"""Proximal policy optimisation (Schulman et al., 2017, "Proximal Policy Optimization
Algorithms") with generalised advantage estimation (Schulman et al., 2016, "High-Dimensional
Continuous Control Using Generalized Advantage Estimation"): `train_ppo` trains an
`ActorCritic` on a vector of environments with discrete actions.

Each iteration collects a rollout of `PPOConfig.num_steps` steps of every environment,
drawing actions from the policy (`policy.sample_actions`, on the device, from the run's
generator), computes the advantages by `gae`, then takes `update_epochs` passes over the
rollout in `num_minibatches` shuffled minibatches (the order from
`pyburn.data.permutation`), each an Adam step on `ppo_loss` with the gradients' norm
clipped. The learning rate falls linearly to 0 over the run (`anneal_lr`).

An episode cut short by its time limit is not a termination: its last step's advantage is
bootstrapped from the value of its final observation (``info["final_observation"]`` of
`SyncVectorEnv`), while no advantage flows from the next episode into it.

Steps count every environment's steps; the run goes on to the end of the rollout in which
it reaches `total_steps`.

>>> from pyburn.rl import CartPole
>>> config = PPOConfig(num_steps=16, num_minibatches=2, update_epochs=1)
>>> result = train_ppo(CartPole, config, total_steps=64, seed=0, device="flex", num_envs=2)
>>> result.stats.step
64
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Generator as Run
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._tensor import Tensor
from ..data.shuffle import permutation
from ..devices import Device
from ..dtypes import float32, int32
from ..errors import ArgumentError
from ..ops.creation import DeviceLike, tensor
from ..ops.indexing import index_select
from ..ops.movement import cat, stack
from ..optim import Adam
from ..optim.clip import clip_grad_norm_
from ..optim.lr_scheduler import LinearLR
from ..random import Generator
from ..tape import no_grad
from .env import Env
from .episodes import EpisodeStats
from .policy import ActorCritic, log_prob_and_entropy, sample_actions
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
    training_device,
)
from .vector import SyncVectorEnv, VectorStep

#: Adam's epsilon: PPO's implementations take 1e-5 rather than Adam's 1e-8
ADAM_EPS = 1e-5
#: keeps the normalisation of a minibatch's advantages finite when they are all equal
NORMALIZE_EPS = 1e-8


@dataclass(frozen=True)
class PPOConfig:
    """PPO's hyperparameters; the defaults, those of the PPO paper's Atari runs as CleanRL's
    CartPole example uses them, solve CartPole-v1 (docs/rl.md has the numbers)."""

    #: Adam's learning rate at the start
    learning_rate: float = 2.5e-4
    #: whether the learning rate falls linearly to 0 over the run
    anneal_lr: bool = True
    #: steps of each environment per rollout
    num_steps: int = 128
    #: the discount, and GAE's lambda
    gamma: float = 0.99
    gae_lambda: float = 0.95
    #: minibatches per pass over a rollout (they must divide its num_steps * num_envs steps)
    num_minibatches: int = 4
    #: passes over each rollout
    update_epochs: int = 4
    #: whether each minibatch's advantages are scaled to mean 0 and standard deviation 1
    normalize_advantages: bool = True
    #: the probability ratio is clipped to [1 - clip_coef, 1 + clip_coef]
    clip_coef: float = 0.2
    #: whether the value loss is clipped as well (around the rollout's values, by clip_coef)
    clip_value_loss: bool = True
    #: the entropy bonus's and the value loss's weights in the loss
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    #: the gradients' total norm is clipped to this (None: no clipping)
    max_grad_norm: float | None = 0.5
    #: the hidden layers' widths of the default actor and critic
    hidden: tuple[int, ...] = (64, 64)

    def __post_init__(self) -> None:
        check_fields(self, counts=("num_steps", "num_minibatches", "update_epochs"),
                     positive=("learning_rate", "clip_coef"),
                     fractions=("gamma", "gae_lambda"))
        if self.ent_coef < 0 or self.vf_coef < 0:
            raise ArgumentError(f"PPOConfig's ent_coef and vf_coef must be >= 0, got "
                                f"{self.ent_coef!r} and {self.vf_coef!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ArgumentError(f"PPOConfig.max_grad_norm must be positive or None, got "
                                f"{self.max_grad_norm!r}")


class PPOResult(NamedTuple):
    """What `train_ppo` gives: the trained policy (on the training device) and the run's
    episodes."""

    policy: ActorCritic
    stats: EpisodeStats


class PPOLoss(NamedTuple):
    """A minibatch's loss ``policy - ent_coef * entropy + vf_coef * value`` and its parts
    (0-d tensors; `entropy` is the mean entropy, the bonus)."""

    total: Tensor
    policy: Tensor
    value: Tensor
    entropy: Tensor


def gae(rewards: Sequence[Sequence[float]], values: Sequence[Sequence[float]],
        next_values: Sequence[Sequence[float]], terminated: Sequence[Sequence[bool]],
        truncated: Sequence[Sequence[bool]], gamma: float,
        lam: float) -> tuple[list[list[float]], list[list[float]]]:
    """Generalised advantage estimates of a rollout and their returns (advantage + value),
    each ``[step][environment]``, in Python floats.

    Each argument is ``[step][environment]``: `values` are ``V(s_t)``, `next_values` the
    values of the states each step led to (``V`` of the final observation where an episode
    ended there, of the next step's observation elsewhere; unused where it terminated).
    ``delta_t = r_t + gamma * V(s_t+1) * (1 - terminated_t) - V(s_t)`` and ``A_t = delta_t +
    gamma * lam * A_t+1``, the sum cut where an episode ended (terminated or truncated)."""
    steps = len(rewards)
    envs = len(rewards[0]) if steps else 0
    advantages = [[0.0] * envs for _ in range(steps)]
    following = [0.0] * envs  # A_t+1 of each environment
    for t in reversed(range(steps)):
        for k in range(envs):
            ended = terminated[t][k]
            delta = rewards[t][k] - values[t][k] + (0.0 if ended else gamma * next_values[t][k])
            carried = 0.0 if ended or truncated[t][k] else gamma * lam * following[k]
            following[k] = advantages[t][k] = delta + carried
    returns = [[a + v for a, v in zip(row, value_row)]
               for row, value_row in zip(advantages, values)]
    return advantages, returns


def ppo_loss(new_log_probs: Tensor, old_log_probs: Tensor, advantages: Tensor,
             new_values: Tensor, old_values: Tensor, returns: Tensor, entropy: Tensor,
             config: PPOConfig) -> PPOLoss:
    """PPO's loss on a minibatch (tensors of shape (batch,)): the clipped surrogate
    ``mean(max(-A r, -A clip(r, 1 - c, 1 + c)))`` of the probability ratios ``r =
    exp(new_log_probs - old_log_probs)``, the value loss ``0.5 mean((V - R)^2)`` (with
    `clip_value_loss`, ``0.5 mean(max((V - R)^2, (V_clipped - R)^2))``, ``V_clipped`` the
    rollout's value plus the change clipped to ``±c``), and the mean `entropy`."""
    c = config.clip_coef
    if config.normalize_advantages:
        advantages = (advantages - advantages.mean()) / (advantages.std() + NORMALIZE_EPS)
    ratio = (new_log_probs - old_log_probs).exp()
    policy = (-advantages * ratio).maximum(-advantages * ratio.clamp(1.0 - c, 1.0 + c)).mean()
    error = (new_values - returns).square()
    if config.clip_value_loss:
        clipped = old_values + (new_values - old_values).clamp(-c, c)
        error = error.maximum((clipped - returns).square())
    value = 0.5 * error.mean()
    bonus = entropy.mean()
    return PPOLoss(policy - config.ent_coef * bonus + config.vf_coef * value, policy, value,
                   bonus)


class _Batch(NamedTuple):
    """A rollout flattened into rows (step-major), ready for minibatches."""

    observations: Tensor
    actions: Tensor
    log_probs: Tensor
    values: Tensor
    advantages: Tensor
    returns: Tensor


class _Rollout:
    """One rollout's steps as the policy took them; `batch` adds the advantages."""

    def __init__(self) -> None:
        self.observations: list[Tensor] = []
        self.actions: list[Tensor] = []
        self.log_probs: list[Tensor] = []
        self.values: list[Tensor] = []
        self.rewards: list[Sequence[float]] = []
        self.terminated: list[Sequence[bool]] = []
        self.truncated: list[Sequence[bool]] = []
        #: (step, environment, final observation) of each episode cut by its time limit
        self.cut: list[tuple[int, int, Any]] = []

    def add(self, observations: Tensor, actions: Tensor, log_probs: Tensor, values: Tensor,
            step: VectorStep) -> None:
        """One vector step: what the policy saw and did, and what the environments gave."""
        _, rewards, terminated, truncated, info = step
        t = len(self.rewards)
        self.observations.append(observations)
        self.actions.append(actions)
        self.log_probs.append(log_probs)
        self.values.append(values)
        self.rewards.append(rewards)
        self.terminated.append(terminated)
        self.truncated.append(truncated)
        self.cut.extend((t, k, info["final_observation"][k])
                        for k, cut in enumerate(truncated) if cut)

    def batch(self, policy: ActorCritic, last_observations: Tensor, config: PPOConfig) -> _Batch:
        """The rollout's rows with their advantages and returns (`gae`), bootstrapped from
        the observations after the rollout and from the final observations of the episodes
        cut by their time limits."""
        device = last_observations.device
        with no_grad():
            values = stack(self.values).tolist()
            next_values = [row[:] for row in values[1:]]
            next_values.append(policy.values(last_observations).tolist())
            if self.cut:
                finals = observation_batch([final for _, _, final in self.cut], device)
                for (t, k, _), value in zip(self.cut, policy.values(finals).tolist()):
                    next_values[t][k] = value
        advantages, returns = gae(self.rewards, values, next_values, self.terminated,
                                  self.truncated, config.gamma, config.gae_lambda)

        def rows(table: list[list[float]]) -> Tensor:
            return tensor([v for row in table for v in row], dtype=float32, device=device)

        return _Batch(cat(self.observations), cat(self.actions), cat(self.log_probs),
                      cat(self.values), rows(advantages), rows(returns))


class _Agent:
    """The policy, its optimizer and learning-rate schedule, and the streams of a run."""

    def __init__(self, policy: ActorCritic, config: PPOConfig, device: Device,
                 generator: Generator, iterations: int):
        policy.to(device)
        self.policy = policy
        self.config, self.device, self.generator = config, device, generator
        self.optimizer = Adam(self.policy.parameters(), lr=config.learning_rate, eps=ADAM_EPS)
        self.schedule = (LinearLR(self.optimizer, 1.0, 0.0, total_iters=iterations)
                         if config.anneal_lr else None)
        self.order_seed = child_seed(generator)
        self.updates = 0  # passes over rollouts so far: each one's order differs
        self.loss: PPOLoss | None = None

    def act(self, observations: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Sampled actions, their log-probabilities and the values of `observations`."""
        with no_grad():
            logits, values = self.policy(observations)
            actions = sample_actions(logits, self.generator)
            return actions, log_prob_and_entropy(logits, actions)[0], values

    def learn(self, batch: _Batch) -> None:
        """`update_epochs` passes over `batch` in shuffled minibatches."""
        config = self.config
        size = batch.observations.shape[0]
        per_minibatch = size // config.num_minibatches
        for _ in range(config.update_epochs):
            order = permutation(size, self.order_seed, epoch=self.updates)
            self.updates += 1
            for start in range(0, size, per_minibatch):
                index = tensor(order[start:start + per_minibatch], dtype=int32,
                               device=self.device)
                self._step(_Batch(*(index_select(t, 0, index) for t in batch)))
        if self.schedule is not None:
            self.schedule.step()

    def _step(self, minibatch: _Batch) -> None:
        """One Adam step on `minibatch`'s loss."""
        logits, values = self.policy(minibatch.observations)
        log_probs, entropy = log_prob_and_entropy(logits, minibatch.actions)
        loss = ppo_loss(log_probs, minibatch.log_probs, minibatch.advantages, values,
                        minibatch.values, minibatch.returns, entropy, self.config)
        self.optimizer.zero_grad()
        loss.total.backward()
        if self.config.max_grad_norm is not None:
            clip_grad_norm_(self.policy.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.loss = PPOLoss(*(part.detach() for part in loss))

    def metrics(self) -> dict[str, float]:
        """What the log adds to each finished episode: the latest minibatch's losses and
        the learning rate."""
        values = {"learning_rate": float(self.optimizer.param_groups[0]["lr"])}
        if self.loss is not None:
            values.update(loss=self.loss.total.item(), policy_loss=self.loss.policy.item(),
                          value_loss=self.loss.value.item(), entropy=self.loss.entropy.item())
        return values


def _run(agent: _Agent, envs: SyncVectorEnv, stats: EpisodeStats, iterations: int, seed: int,
         progress: Progress | None) -> Iterator[None]:
    """Collect rollouts and learn from them, `iterations` times or until `progress` says
    to stop; yields after each update."""
    observations = observation_batch(envs.reset(seed=seed)[0], agent.device)
    for _ in range(iterations):
        rollout = _Rollout()
        for _ in range(agent.config.num_steps):
            actions, log_probs, values = agent.act(observations)
            step = envs.step(actions.tolist())
            rollout.add(observations, actions, log_probs, values, step)
            observations = observation_batch(step[0], agent.device)
            if stats.update(*step[1:4], agent.metrics) and progress is not None \
                    and progress(stats):
                return
        agent.learn(rollout.batch(agent.policy, observations, agent.config))
        yield


def train_ppo(make_env: Callable[[], Env], config: PPOConfig | None = None, *,
              total_steps: int, seed: int, device: DeviceLike = None, num_envs: int = 4,
              policy: ActorCritic | None = None, run_dir: RunTarget = None,
              progress: Progress | None = None) -> PPOResult:
    """Train a policy by PPO (`ppo_training` run to its end; the arguments are its)."""
    return finish(ppo_training(make_env, config, total_steps=total_steps, seed=seed,
                               device=device, num_envs=num_envs, policy=policy,
                               run_dir=run_dir, progress=progress))


def ppo_training(make_env: Callable[[], Env], config: PPOConfig | None = None, *,
                 total_steps: int, seed: int, device: DeviceLike = None, num_envs: int = 4,
                 policy: ActorCritic | None = None, run_dir: RunTarget = None,
                 progress: Progress | None = None) -> Run[PPOResult, None, PPOResult]:
    """PPO's run one update at a time: a generator that yields the policy and the
    statistics after each rollout's update and returns them at the end, so that its caller
    may do other work in between (a web page hands control back to the browser); closing it
    stops the run (logged as "stopped").

    It trains a policy for `total_steps` environment steps (rounded up to whole rollouts) on
    `num_envs` copies of ``make_env()`` (flat box observations, discrete actions: pyburn's
    spaces or gymnasium's).

    - `config`: the hyperparameters (default ``PPOConfig()``);
    - `seed` fixes the run on a given device: the environments (environment ``k`` is reset
      with ``seed + k``), the default policy's weights, the actions drawn and the
      minibatches' order;
    - `device`: where to train (its autodiff form; default: the default device);
    - `policy`: an `ActorCritic`, moved to the training device; default:
      ``ActorCritic.mlp`` with `PPOConfig.hidden` (tanh, orthogonal weights);
    - `run_dir`: a folder to log the run into (``run.json``, ``events.jsonl``: see
      `pyburn.rl.episodes`), or an `EventSink`; the episodes' metrics add the latest
      minibatch's ``loss``, ``policy_loss``, ``value_loss`` and ``entropy``, and the
      ``learning_rate``;
    - `progress`: called with the `EpisodeStats` whenever an episode ends; a true result
      stops the run there.
    """
    config = PPOConfig() if config is None else config
    check_run(total_steps, seed)
    envs, observation_size, actions = discrete_envs(make_env, num_envs)
    rollout_steps = config.num_steps * num_envs
    if rollout_steps % config.num_minibatches:
        raise ArgumentError(f"{config.num_minibatches} minibatches do not divide a rollout "
                            f"of {config.num_steps} steps x {num_envs} environments")
    dev = training_device(device)
    generator = Generator(seed)
    if policy is None:
        policy = ActorCritic.mlp(observation_size, actions, hidden=config.hidden, device=dev,
                                 generator=generator)
    iterations = math.ceil(total_steps / rollout_steps)
    agent = _Agent(policy, config, dev, generator, iterations)
    stats = episode_stats("PPO", envs, run_dir, total_steps, iterations * rollout_steps, seed,
                          dev, config)
    with stats:
        for _ in _run(agent, envs, stats, iterations, seed, progress):
            yield PPOResult(agent.policy, stats)
    return PPOResult(agent.policy, stats)
