"""AsyncVectorEnv against SyncVectorEnv: the same seeds and actions give the same steps
(autoresets and final observations included); misuse is refused before anything is sent; a
worker that dies or hangs raises WorkerError within the timeout and the workers are gone."""

from __future__ import annotations

import functools
import os
import random
import time

import pytest

from pyburn.errors import ArgumentError, WorkerError
from pyburn.rl import AsyncVectorEnv, CartPole, SyncVectorEnv, make
from pyburn.rl.env import Env

MAKERS = [functools.partial(make, "CartPole-v1")] * 3


class Stalls(CartPole):
    """A CartPole that hangs on its third step, or dies there (`exits`)."""

    def __init__(self, exits: bool = False):
        super().__init__()
        self.exits = exits

    def _step(self, action: int):
        if self.elapsed == 2:
            if self.exits:
                os._exit(3)
            time.sleep(30)
        return super()._step(action)


def test_the_steps_equal_the_synchronous_vectors():
    actions = random.Random(0)
    with AsyncVectorEnv(MAKERS) as parallel, SyncVectorEnv(MAKERS) as serial:
        assert parallel.single_action_space.n == 2
        assert parallel.reset(seed=5) == serial.reset(seed=5)
        ended = 0
        for _ in range(60):
            chosen = [actions.randrange(2) for _ in range(3)]
            mine = parallel.step(chosen)
            assert mine == serial.step(chosen)
            ended += sum(mine[2]) + sum(mine[3])
        assert ended > 0  # some episodes ended and were reset in the same step


@pytest.mark.parametrize("exits", [False, True], ids=["hangs", "dies"])
def test_a_worker_that_hangs_or_dies_raises_within_the_timeout(exits):
    envs = AsyncVectorEnv([functools.partial(Stalls, exits)], timeout=1.0)
    envs.reset(seed=0)
    envs.step([0])
    envs.step([1])
    started = time.monotonic()
    with pytest.raises(WorkerError, match="did not answer" if not exits else "died"):
        envs.step([0])
    assert time.monotonic() - started < 10
    assert not envs._workers  # closed: the workers were stopped


def test_misuse_is_refused_before_anything_is_sent():
    with AsyncVectorEnv(MAKERS[:2]) as envs:
        envs.reset(seed=0)
        with pytest.raises(ArgumentError, match="not in the action space"):
            envs.step([0, 2])
        with pytest.raises(ArgumentError, match="2 environments, 1 actions"):
            envs.step([0])
        with pytest.raises(ArgumentError, match="without a step_async"):
            envs.step_wait()
        envs.step_async([1, 1])
        with pytest.raises(ArgumentError, match="step_wait"):
            envs.reset()
        assert len(envs.step_wait()[0]) == 2
    with pytest.raises(ArgumentError, match="closed"):
        envs.reset()
    with pytest.raises(ArgumentError, match="at least one"):
        AsyncVectorEnv([])


class Broken(Env):
    """An environment whose step fails: its error must come back as itself."""

    def __init__(self):
        super().__init__()
        env = CartPole()
        self.observation_space, self.action_space = env.observation_space, env.action_space

    def _reset(self, options):
        return [0.0] * 4

    def _step(self, action):
        raise ZeroDivisionError("the environment's own bug")


def test_an_environments_error_comes_back_as_itself():
    envs = AsyncVectorEnv([Broken])
    envs.reset()
    with pytest.raises(ZeroDivisionError, match="own bug"):
        envs.step([0])
    assert not envs._workers
