"""pyburn.rl's DQN: the double-Q and plain Q-learning targets against PyTorch on the same
numbers, the epsilon schedule, the configuration's checks, a short seeded run on CartPole
that beats a random policy by far and repeats itself exactly, a run on every device, and
the run folder's events."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.rl import CartPole, DQNConfig, td_targets, train_dqn
from pyburn.train import read_events, read_metrics

torch = pytest.importorskip("torch")

REWARDS = [1.0, 0.5, -1.0, 2.0]
DONES = [False, True, False, False]
#: the next states' values by the online and the target network: they disagree on the
#: best action in rows 0 and 3, where double Q-learning's target differs
NEXT_ONLINE = [[1.0, 3.0, 2.0], [0.0, 1.0, 5.0], [4.0, 2.0, 1.0], [0.5, 0.2, 0.1]]
NEXT_TARGET = [[2.0, 1.0, 4.0], [3.0, 2.0, 1.0], [1.5, 0.5, 0.0], [-1.0, 2.0, 0.0]]
GAMMA = 0.9
#: a short run that learns CartPole well past a random policy's mean return (about 22)
QUICK = DQNConfig(learning_rate=1e-3, buffer_size=5_000, batch_size=64, learning_starts=500,
                  train_frequency=2, target_update_interval=250, exploration_fraction=0.4,
                  hidden=(64, 64))
QUICK_STEPS = 5_000


def torch_targets(double: bool) -> list[float]:
    """y = r + gamma (1 - done) Q'(s', a*), a* = argmax Q(s', .) (double) or of Q'."""
    rewards, dones = torch.tensor(REWARDS), torch.tensor(DONES, dtype=torch.float32)
    online, target = torch.tensor(NEXT_ONLINE), torch.tensor(NEXT_TARGET)
    if double:
        best = online.argmax(dim=1)
        values = target[torch.arange(len(REWARDS)), best]
    else:
        values = target.max(dim=1).values
    return (rewards + GAMMA * (1.0 - dones) * values).tolist()


@pytest.mark.parametrize("double", [True, False])
def test_targets_are_torchs(device, double):
    def t(values, **options):
        return pyburn.tensor(values, device=device, **options)

    got = td_targets(t(REWARDS), t(DONES), t(NEXT_TARGET), GAMMA,
                     t(NEXT_ONLINE) if double else None)
    assert got.tolist() == pytest.approx(torch_targets(double), rel=1e-6)


def test_epsilon_falls_linearly_then_stays():
    config = DQNConfig(epsilon_start=1.0, epsilon_end=0.1, exploration_fraction=0.5)
    assert [config.epsilon(s, 1000) for s in (0, 250, 500, 900)] == \
        pytest.approx([1.0, 0.55, 0.1, 0.1])
    assert DQNConfig(exploration_fraction=0.0).epsilon(0, 10) == 0.05


@pytest.mark.parametrize("fields, message", [
    ({"batch_size": 0}, "batch_size must be a positive int"),
    ({"gamma": 1.5}, r"gamma must be in \[0, 1\]"),
    ({"tau": 0.0}, "tau must be positive"),
    ({"learning_starts": -1}, "learning_starts"),
    ({"max_grad_norm": 0.0}, "max_grad_norm"),
])
def test_a_wrong_config_is_refused(fields, message):
    with pytest.raises(pyburn.ArgumentError, match=message):
        DQNConfig(**fields)


def test_a_short_run_learns_cartpole_and_repeats_itself():
    first = train_dqn(CartPole, QUICK, total_steps=QUICK_STEPS, seed=1, device="cpu")
    assert first.stats.step == QUICK_STEPS
    assert first.stats.mean_return(20) >= 60  # a random policy: about 22
    again = train_dqn(CartPole, QUICK, total_steps=QUICK_STEPS, seed=1, device="cpu",
                      progress=lambda stats: stats.step >= 1_500)  # the same schedule, cut
    assert again.stats.episodes == first.stats.episodes[:len(again.stats.episodes)]


def test_every_device_runs_it(device):
    config = DQNConfig(batch_size=8, learning_starts=16, buffer_size=64, train_frequency=4,
                       gradient_steps=2, target_update_interval=8, tau=0.5, hidden=(8,))
    result = train_dqn(CartPole, config, total_steps=48, seed=0, device=device, num_envs=2)
    assert result.stats.step == 48 and result.stats.episodes
    weights = result.q_network[0].weight
    assert weights.device == device.autodiff() and weights.isfinite().all().item()


def test_the_run_folder_holds_the_episodes_and_progress_stops_the_run(tmp_path):
    seen = []

    def progress(stats) -> bool:
        seen.append(stats.step)
        return len(stats.episodes) >= 5

    config = DQNConfig(learning_starts=40, batch_size=16, hidden=(16,))
    result = train_dqn(CartPole, config, total_steps=10_000, seed=0, device="cpu",
                       run_dir=tmp_path, progress=progress)
    assert len(result.stats.episodes) == 5 and result.stats.step == seen[-1] < 10_000
    metrics = read_metrics(tmp_path)
    assert [m["metrics"]["episode_return"] for m in metrics] == \
        [e.return_ for e in result.stats.episodes]
    assert all(m["batches"] == 10_000 for m in metrics)
    assert {"epsilon", "loss"} <= set(metrics[-1]["metrics"])
    assert read_events(tmp_path)[-1]["state"] == "ended"
