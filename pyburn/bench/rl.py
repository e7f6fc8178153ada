"""Reinforcement learning: how long pyburn.rl's agents take to solve CartPole-v1 on cpu, with
their default configurations and seed 0: DQN (`train_dqn`, one environment) and PPO
(`train_ppo`, four), each trained until the mean return of its last 100 episodes reaches
195 (CartPole's customary threshold), or until its step cap.

Two rows per agent: the wall time to solve, against the goal of 5 minutes, and the
environment steps it took, against the cap (each ratio: the goal or the cap over the
measure, above 1 when it is beaten). A run that reaches its cap unsolved reports infinite
time and steps, a miss. A quick run's goal is the first episode's end (a smoke test).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..rl import CartPole, EpisodeStats, train_dqn, train_ppo
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings

SEED = 0
#: the wall time to solve CartPole that each agent should beat (issue 21)
TIME_GOAL_S = 300.0
TIME_TARGET = Target("value", at_least=False, bound=TIME_GOAL_S, unit="s")


@dataclass(frozen=True)
class Goal:
    """Solved when the mean return of the last `episodes` episodes reaches `mean_return`;
    the run stops at `cap` steps otherwise (its schedules span the cap)."""

    mean_return: float
    episodes: int
    cap: int

    def reached(self, stats: EpisodeStats) -> bool:
        """Whether the goal is reached (a full window of episodes is needed)."""
        return (len(stats.episodes) >= self.episodes
                and stats.mean_return(self.episodes) >= self.mean_return)


#: each agent's training function and its goal: full size, and quick
AGENTS: dict[str, tuple[Callable[..., Any], Goal, Goal]] = {
    "DQN": (train_dqn, Goal(195.0, 100, 150_000), Goal(1.0, 1, 2_000)),
    "PPO": (train_ppo, Goal(195.0, 100, 200_000), Goal(1.0, 1, 2_000)),
}


def _solve(train: Callable[..., Any], goal: Goal) -> tuple[float, float]:
    """Seconds and steps `train` takes to reach `goal` (infinite when it does not)."""
    started = time.perf_counter()
    result = train(make_env=CartPole, total_steps=goal.cap, seed=SEED, device="cpu",
                   progress=goal.reached)
    seconds = time.perf_counter() - started
    if not goal.reached(result.stats):
        return math.inf, math.inf
    return seconds, float(result.stats.step)


def measure_cpu(settings: Settings) -> list[Row]:
    """Each agent's seconds and steps to solve CartPole on cpu."""
    rows = []
    for name, (train, full, quick) in AGENTS.items():
        goal = quick if settings.quick else full
        seconds, steps = _solve(train, goal)
        case = (f"{name}, CartPole-v1, default config, seed {SEED}: mean return of the last "
                f"{goal.episodes} episodes >= {goal.mean_return:g}")
        rows.append(Row("rl.cpu", case, "s", seconds, seconds, "the goal", TIME_GOAL_S,
                        TIME_GOAL_S / seconds, TIME_TARGET, settings.quick))
        rows.append(Row("rl.cpu", case, "steps", steps, steps, "the step cap", goal.cap,
                        goal.cap / steps, None, settings.quick))
    return rows


BENCHMARKS = (
    Benchmark("rl", "cpu", "DQN and PPO: seconds and steps to solve CartPole-v1",
              measure_cpu),
)
