"""`MountainCar`: an underpowered car in a valley must rock back and forth to climb the hill
on the right (Moore, 1990; Sutton and Barto's version), with gymnasium's MountainCar-v0
constants, so its dynamics equal that environment's step for step; in pure Python, so it
runs in Pyodide. Reward -1 a step, episodes truncated after 200 steps.

>>> env = MountainCar()
>>> observation, _ = env.reset(seed=0)
>>> observation[1], env.step(1)[1]
(0.0, -1.0)
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ArgumentError
from .env import Env
from .spaces import Box, Discrete

#: the engine's push per unit of action and the pull of the slope
FORCE, GRAVITY = 0.001, 0.0025
MAX_SPEED = 0.07
MIN_POSITION, MAX_POSITION = -1.2, 0.6
GOAL_POSITION = 0.5


class MountainCar(Env):
    """Observations (position, velocity); actions 0 (accelerate left), 1 (coast) and 2
    (accelerate right). The valley is the curve ``sin(3 x)``, so its slope pulls with
    ``-cos(3 x) * GRAVITY``; the velocity is clipped to ``±MAX_SPEED``, the position to
    [-1.2, 0.6], and reaching the left wall stops the car. The episode ends when the car
    reaches position 0.5 moving right (or standing). ``reset(options={"state": [x, v]})``
    starts from a given state (else x uniform in [-0.6, -0.4], v = 0)."""

    max_episode_steps = 200

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = Box([MIN_POSITION, -MAX_SPEED], [MAX_POSITION, MAX_SPEED])
        self.action_space = Discrete(3)
        self.state = (0.0, 0.0)

    def _reset(self, options: dict[str, Any]) -> list[float]:
        given = options.get("state")
        values = [float(v) for v in given] if given is not None else \
            [self.rng.uniform(-0.6, -0.4), 0.0]
        if len(values) != 2:
            raise ArgumentError(f"a MountainCar state is (position, velocity), got {given!r}")
        self.state = (values[0], values[1])
        return values

    def _step(self, action: int) -> tuple[list[float], float, bool, dict[str, Any]]:
        position, velocity = self.state
        velocity += (action - 1) * FORCE - math.cos(3 * position) * GRAVITY
        velocity = min(max(velocity, -MAX_SPEED), MAX_SPEED)
        position = min(max(position + velocity, MIN_POSITION), MAX_POSITION)
        if position == MIN_POSITION and velocity < 0:  # the wall absorbs the car's momentum
            velocity = 0.0
        self.state = (position, velocity)
        terminated = position >= GOAL_POSITION and velocity >= 0
        return [position, velocity], -1.0, terminated, {}
