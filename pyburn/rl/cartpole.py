"""`CartPole`: a pole on a cart, pushed left or right each step until the pole leans more
than 12 degrees or the cart leaves the track (Barto, Sutton and Anderson, 1983), with
gymnasium's CartPole-v1 constants and Euler integration, so its dynamics equal that
environment's step for step; in pure Python, so it runs in Pyodide. Reward 1 a step,
episodes truncated after 500 steps.

>>> env = CartPole()
>>> observation, _ = env.reset(seed=0)
>>> len(observation), env.step(1)[1]
(4, 1.0)
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ArgumentError
from .env import Env
from .spaces import Box, Discrete

GRAVITY, CART_MASS, POLE_MASS = 9.8, 1.0, 0.1
#: half the pole's length, the push and the time step
HALF_LENGTH, FORCE, TAU = 0.5, 10.0, 0.02
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4


class CartPole(Env):
    """Observations (x, x', theta, theta'); actions 0 (push left) and 1 (push right).
    ``reset(options={"state": [...]})`` starts from a given state (else each value uniform
    in [-0.05, 0.05])."""

    max_episode_steps = 500

    def __init__(self) -> None:
        super().__init__()
        bound = [X_LIMIT * 2, math.inf, THETA_LIMIT * 2, math.inf]
        self.observation_space = Box([-b for b in bound], bound)
        self.action_space = Discrete(2)
        self.state = (0.0, 0.0, 0.0, 0.0)

    def _reset(self, options: dict[str, Any]) -> list[float]:
        given = options.get("state")
        values = [float(v) for v in given] if given is not None else \
            [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        if len(values) != 4:
            raise ArgumentError(f"a CartPole state is (x, x', theta, theta'), got {given!r}")
        self.state = (values[0], values[1], values[2], values[3])
        return values

    def _step(self, action: int) -> tuple[list[float], float, bool, dict[str, Any]]:
        x, x_dot, theta, theta_dot = self.state
        force = FORCE if action == 1 else -FORCE
        total = CART_MASS + POLE_MASS
        cos, sin = math.cos(theta), math.sin(theta)
        common = (force + POLE_MASS * HALF_LENGTH * theta_dot * theta_dot * sin) / total
        theta_acc = (GRAVITY * sin - cos * common) / (
            HALF_LENGTH * (4.0 / 3.0 - POLE_MASS * cos * cos / total))
        x_acc = common - POLE_MASS * HALF_LENGTH * theta_acc * cos / total
        self.state = (x + TAU * x_dot, x_dot + TAU * x_acc, theta + TAU * theta_dot,
                      theta_dot + TAU * theta_acc)
        x, _, theta, _ = self.state
        terminated = not (-X_LIMIT <= x <= X_LIMIT and -THETA_LIMIT <= theta <= THETA_LIMIT)
        return list(self.state), 1.0, terminated, {}
