"""What both agents' runs share: run one update (PPO) or one step (DQN) at a time by their
generators, with the same results as the whole run; a generator closed early logs
"stopped"; an `EventSink` receives the records a run folder would hold; gymnasium's own
environments train as pyburn's do."""

from __future__ import annotations

from typing import Any

import pytest

from pyburn.rl import (
    CartPole,
    DQNConfig,
    PPOConfig,
    dqn_training,
    make,
    ppo_training,
    train_dqn,
    train_ppo,
)
from pyburn.train import read_events

gymnasium = pytest.importorskip("gymnasium")

PPO = PPOConfig(num_steps=32, num_minibatches=2, update_epochs=2)
DQN = DQNConfig(learning_starts=32, batch_size=16, buffer_size=256)


class Sink:
    """An `EventSink` that keeps what it is given."""

    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None
        self.records: list[dict[str, Any]] = []
        self.closed = False

    def write_config(self, config: dict[str, Any]) -> None:
        self.config = config

    def append(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("start, whole, config, per_yield", [
    (ppo_training, train_ppo, PPO, 2 * 32),
    (dqn_training, train_dqn, DQN, 2),
], ids=["ppo", "dqn"])
def test_a_run_one_piece_at_a_time_is_the_whole_run(start, whole, config, per_yield):
    run = start(CartPole, config, total_steps=256, seed=3, device="cpu", num_envs=2)
    steps = [result.stats.step for result in run]
    assert steps == list(range(per_yield, 257, per_yield))
    returns = [e.return_ for e in whole(CartPole, config, total_steps=256, seed=3,
                                        device="cpu", num_envs=2).stats.episodes]
    last = list(start(CartPole, config, total_steps=256, seed=3, device="cpu", num_envs=2))[-1]
    assert [e.return_ for e in last.stats.episodes] == returns


def test_closing_the_generator_stops_the_run_and_a_sink_gets_its_records(tmp_path):
    sink = Sink()
    run = ppo_training(CartPole, PPO, total_steps=10_000, seed=0, device="cpu", num_envs=2,
                       run_dir=sink)
    for _ in range(3):
        result = next(run)
    run.close()
    assert sink.closed and sink.config["algorithm"] == "PPO"
    statuses = [r["state"] for r in sink.records if r["event"] == "status"]
    assert statuses == ["started", "stopped"]
    episodes = [r for r in sink.records if r["event"] == "metrics"]
    assert len(episodes) == len(result.stats.episodes) > 0
    # the same run logged into a folder gives the same records
    run = ppo_training(CartPole, PPO, total_steps=10_000, seed=0, device="cpu", num_envs=2,
                       run_dir=tmp_path)
    for _ in range(3):
        next(run)
    run.close()
    drop = ("time",)
    assert ([{k: v for k, v in e.items() if k not in drop} for e in read_events(tmp_path)]
            == [{k: v for k, v in r.items() if k not in drop} for r in sink.records])


@pytest.mark.parametrize("whole, config", [(train_ppo, PPO), (train_dqn, DQN)],
                         ids=["ppo", "dqn"])
def test_gymnasiums_environments_train_as_they_are(whole, config):
    result = whole(lambda: gymnasium.make("CartPole-v1"), config, total_steps=256, seed=0,
                   device="cpu", num_envs=2)
    assert result.stats.step == 256 and result.stats.episodes


def test_make_finds_gymnasiums_environments_and_names_the_unknown():
    assert make("CartPole-v1").__class__ is CartPole
    assert make("Acrobot-v1").unwrapped.__class__.__name__ == "AcrobotEnv"
    with pytest.raises(ValueError, match="no environment 'Nope-v0'"):
        make("Nope-v0")
