"""pyburn.rl's PPO: GAE against a float64 numpy reference on a hand-built rollout with
terminations and truncations; the rollout's bootstrap from a cut episode's final
observation; the clipped loss, the log-probabilities and entropies against PyTorch on the
same numbers; the Gumbel-max sampler's frequencies; a short seeded run on CartPole that
beats a random policy by far and repeats itself exactly; a run on every device and the run
folder's events."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pyburn
from pyburn import nn
from pyburn.rl import (
    ActorCritic,
    CartPole,
    Env,
    PPOConfig,
    SyncVectorEnv,
    gae,
    log_prob_and_entropy,
    ppo_loss,
    sample_actions,
    train_ppo,
)
from pyburn.rl.ppo import _Rollout
from pyburn.rl.spaces import Box, Discrete
from pyburn.train import read_events, read_metrics

torch = pytest.importorskip("torch")
stats = pytest.importorskip("scipy.stats")

GAMMA, LAM = 0.9, 0.8
#: a rollout of 5 steps of 3 environments: rewards, values, the next states' values,
#: terminations and truncations (environment 0 terminates at step 1, environment 1 is cut
#: at step 2 and terminates at step 4, environment 2 runs through)
REWARDS = [[1.0, 0.5, -1.0], [2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, -2.0, 0.5],
           [0.5, 1.0, 2.0]]
VALUES = [[0.3, 1.0, -0.5], [0.8, 0.2, 0.1], [1.5, -0.4, 0.7], [0.2, 0.9, 1.1],
          [-0.3, 0.6, 0.4]]
NEXT = [[0.8, 0.2, 0.1], [9.0, -0.4, 0.7], [0.2, 4.0, 1.1], [-0.3, 0.6, 0.4],
        [0.7, 7.0, -0.2]]
TERMINATED = [[False] * 3, [True, False, False], [False] * 3, [False] * 3,
              [False, True, False]]
TRUNCATED = [[False] * 3, [False] * 3, [False, True, False], [False] * 3, [False] * 3]
#: a short run that learns CartPole well past a random policy's mean return (about 22)
QUICK = PPOConfig(learning_rate=2.5e-3, num_steps=64, num_minibatches=2, update_epochs=4)
QUICK_STEPS = 10_240


def numpy_gae() -> tuple[np.ndarray, np.ndarray]:
    """A_t as the forward sum of (gamma lambda)^l delta_t+l up to the end of the episode
    (the step that ended it included), in float64."""
    r, v, nv = (np.array(x, dtype=np.float64) for x in (REWARDS, VALUES, NEXT))
    term, cut = np.array(TERMINATED), np.array(TRUNCATED)
    delta = r + GAMMA * nv * ~term - v
    advantages = np.zeros_like(r)
    steps = len(REWARDS)
    for k in range(r.shape[1]):
        for t in range(steps):
            end = t
            while end < steps - 1 and not (term[end, k] or cut[end, k]):
                end += 1
            weights = (GAMMA * LAM) ** np.arange(end - t + 1)
            advantages[t, k] = weights @ delta[t:end + 1, k]
    return advantages, advantages + v


def test_gae_is_numpys():
    advantages, returns = gae(REWARDS, VALUES, NEXT, TERMINATED, TRUNCATED, GAMMA, LAM)
    want_advantages, want_returns = numpy_gae()
    np.testing.assert_allclose(advantages, want_advantages, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(returns, want_returns, rtol=1e-12, atol=1e-12)


class Corridor(Env):
    """Observation [position]; every step moves one cell right (either action) for reward 1;
    the episode terminates at cell `goal` and is cut after `max_episode_steps` steps."""

    def __init__(self, goal: int, limit: int):
        super().__init__()
        self.goal, self.max_episode_steps = goal, limit
        self.observation_space = Box([0.0], [100.0])
        self.action_space = Discrete(2)
        self.position = 0

    def _reset(self, options: dict[str, Any]) -> list[float]:
        self.position = 0
        return [0.0]

    def _step(self, action: int) -> tuple[list[float], float, bool, dict[str, Any]]:
        self.position += 1
        return [float(self.position)], 1.0, self.position == self.goal, {}


def test_a_cut_episode_is_bootstrapped_from_its_final_observation():
    # environment 0 terminates at cell 2, environment 1 is cut after 3 steps at cell 3
    envs = SyncVectorEnv([lambda: Corridor(2, 10), lambda: Corridor(10, 3)])
    dev = pyburn.device("cpu").autodiff()
    critic = nn.Linear(1, 1, device=dev)
    critic.load_state_dict({"weight": [[0.5]], "bias": [0.25]})  # V(x) = x / 2 + 1 / 4
    policy = ActorCritic(nn.Linear(1, 2, device=dev), critic)
    observations = pyburn.tensor(envs.reset(seed=0)[0], device=dev)
    rollout = _Rollout()
    for _ in range(4):
        with pyburn.no_grad():
            logits, values = policy(observations)
            actions = sample_actions(logits, pyburn.Generator(0))
            log_probs = log_prob_and_entropy(logits, actions)[0]
        step = envs.step(actions.tolist())
        rollout.add(observations, actions, log_probs, values, step)
        observations = pyburn.tensor(step[0], device=dev)
    config = PPOConfig(gamma=GAMMA, gae_lambda=LAM)
    batch = rollout.batch(policy, observations, config)

    def value(x: float) -> float:
        return x / 2 + 1 / 4

    positions = [[0, 0], [1, 1], [0, 2], [1, 0]]  # what each step saw
    after = [[1, 1], [2, 2], [1, 3], [2, 1]]  # where each step led
    expected = gae([[1.0, 1.0]] * 4, [[value(x) for x in row] for row in positions],
                   [[value(x) for x in row] for row in after],
                   [[False, False], [True, False], [False, False], [True, False]],
                   [[False, False], [False, False], [False, True], [False, False]], GAMMA, LAM)
    flat = [a for row in expected[0] for a in row]
    assert batch.advantages.tolist() == pytest.approx(flat, rel=1e-6)
    assert batch.observations.reshape(-1).tolist() == [x for row in positions for x in row]


def loss_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    draw = np.random.default_rng(seed)
    old = np.log(draw.uniform(0.1, 0.9, 8)).astype(np.float32)
    new = (old + draw.normal(0, 0.4, 8)).astype(np.float32)  # ratios past both clips
    values = draw.normal(0, 1, 8).astype(np.float32)
    return {"new_log_probs": new, "old_log_probs": old,
            "advantages": draw.normal(0, 2, 8).astype(np.float32),
            "new_values": (values + draw.normal(0, 0.5, 8)).astype(np.float32),
            "old_values": values, "returns": draw.normal(0, 1, 8).astype(np.float32),
            "entropy": draw.uniform(0.1, 0.7, 8).astype(np.float32)}


def torch_loss(x: dict[str, np.ndarray], config: PPOConfig) -> list[float]:
    """The PPO paper's L^CLIP, as a loss to minimise, with the value loss and the bonus."""
    t = {k: torch.tensor(v) for k, v in x.items()}
    advantages = t["advantages"]
    if config.normalize_advantages:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    ratio = torch.exp(t["new_log_probs"] - t["old_log_probs"])
    c = config.clip_coef
    policy = -torch.min(ratio * advantages, torch.clamp(ratio, 1 - c, 1 + c) * advantages).mean()
    squared = (t["new_values"] - t["returns"]) ** 2
    if config.clip_value_loss:
        clipped = t["old_values"] + torch.clamp(t["new_values"] - t["old_values"], -c, c)
        squared = torch.max(squared, (clipped - t["returns"]) ** 2)
    value = 0.5 * squared.mean()
    entropy = t["entropy"].mean()
    total = policy - config.ent_coef * entropy + config.vf_coef * value
    return [total.item(), policy.item(), value.item(), entropy.item()]


@pytest.mark.parametrize("clip_value_loss, normalize", [(True, True), (False, False)])
def test_the_loss_is_torchs(device, clip_value_loss, normalize):
    config = PPOConfig(clip_value_loss=clip_value_loss, normalize_advantages=normalize,
                       clip_coef=0.15, ent_coef=0.02, vf_coef=0.7)
    x = loss_inputs()
    loss = ppo_loss(**{k: pyburn.tensor(v, device=device) for k, v in x.items()},
                    config=config)
    assert [part.item() for part in loss] == pytest.approx(torch_loss(x, config), rel=1e-5)


def test_log_probabilities_and_entropies_are_torchs(device):
    logits = np.random.default_rng(1).normal(0, 2, (6, 4)).astype(np.float32)
    actions = [0, 3, 1, 2, 2, 0]
    got = log_prob_and_entropy(pyburn.tensor(logits, device=device),
                               pyburn.tensor(actions, dtype=pyburn.int32, device=device))
    want = torch.distributions.Categorical(logits=torch.tensor(logits))
    assert got[0].tolist() == pytest.approx(want.log_prob(torch.tensor(actions)).tolist(),
                                            rel=1e-5)
    assert got[1].tolist() == pytest.approx(want.entropy().tolist(), rel=1e-5)


def test_sampled_actions_follow_the_softmax():
    logits = pyburn.tensor([[1.0, 0.0, -1.0, 2.0]] * 4000, device="cpu")
    actions = sample_actions(logits, pyburn.Generator(3)).tolist()
    counts = np.bincount(actions, minlength=4)
    p = np.exp([1.0, 0.0, -1.0, 2.0])
    assert stats.chisquare(counts, 4000 * p / p.sum()).pvalue > 1e-3


@pytest.mark.parametrize("fields, message", [
    ({"num_steps": 0}, "num_steps must be a positive int"),
    ({"gae_lambda": 1.2}, r"gae_lambda must be in \[0, 1\]"),
    ({"clip_coef": 0.0}, "clip_coef must be positive"),
    ({"ent_coef": -0.1}, "ent_coef"),
])
def test_a_wrong_config_is_refused(fields, message):
    with pytest.raises(pyburn.ArgumentError, match=message):
        PPOConfig(**fields)
    with pytest.raises(pyburn.ArgumentError, match="minibatches"):
        train_ppo(CartPole, PPOConfig(num_steps=5, num_minibatches=4), total_steps=10, seed=0,
                  num_envs=1, device="cpu")


def test_a_short_run_learns_cartpole_and_repeats_itself():
    first = train_ppo(CartPole, QUICK, total_steps=QUICK_STEPS, seed=2, device="cpu")
    assert first.stats.step == QUICK_STEPS
    assert first.stats.mean_return(20) >= 100  # a random policy: about 22
    again = train_ppo(CartPole, QUICK, total_steps=QUICK_STEPS, seed=2, device="cpu",
                      progress=lambda stats: stats.step >= 3_000)
    assert again.stats.episodes == first.stats.episodes[:len(again.stats.episodes)]


def test_every_device_runs_it(device):
    config = PPOConfig(num_steps=8, num_minibatches=2, update_epochs=2, hidden=(8,))
    result = train_ppo(CartPole, config, total_steps=32, seed=0, device=device, num_envs=2)
    assert result.stats.step == 32
    weights = result.policy.actor[0].weight
    assert weights.device == device.autodiff() and weights.isfinite().all().item()


def test_the_run_folder_holds_the_episodes(tmp_path):
    config = PPOConfig(num_steps=32, num_minibatches=2, update_epochs=1)
    result = train_ppo(CartPole, config, total_steps=200, seed=0, device="cpu", num_envs=2,
                       run_dir=tmp_path)
    assert result.stats.step == 256  # whole rollouts of 64 steps
    metrics = read_metrics(tmp_path)
    assert [m["metrics"]["episode_return"] for m in metrics] == \
        [e.return_ for e in result.stats.episodes]
    assert {"loss", "policy_loss", "value_loss", "entropy", "learning_rate"} <= \
        set(metrics[-1]["metrics"])
    assert all(m["batches"] == 256 for m in metrics)
    events = read_events(tmp_path)
    assert (events[0]["state"], events[-1]["state"]) == ("started", "ended")
