"""`GridWorld`: an agent walks a grid of cells to a goal, around walls and past holes, each
move possibly slipping sideways: the small tabular world of Sutton and Barto's examples
(FrozenLake's, with slip=0 and its map, has the same transitions). In pure Python, so it
runs in Pyodide.

>>> env = GridWorld(rows=2, cols=3, walls=[(0, 1)], holes=[(1, 1)])
>>> print(env.render_text())
@#.
.OG
>>> env.reset(seed=0)[0], env.step(2)[0]
(0, 3)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ArgumentError
from .env import Env
from .spaces import Discrete

Cell = tuple[int, int]

#: the (row, column) change of each action: 0 up, 1 right, 2 down, 3 left
MOVES: tuple[Cell, ...] = ((-1, 0), (0, 1), (1, 0), (0, -1))
GOAL_REWARD, HOLE_REWARD = 1.0, -1.0


class GridWorld(Env):
    """A `rows` x `cols` grid; the observation is the agent's cell index ``row * cols +
    col`` and the actions are 0 (up), 1 (right), 2 (down) and 3 (left).

    A move into a wall or off the grid leaves the agent where it is. With probability
    `slip` the move goes instead to one of the two directions perpendicular to the chosen
    one (each half as likely), drawn from the environment's generator. Reaching the `goal`
    (default: the bottom-right cell) ends the episode with reward +1, falling into one of
    the `holes` ends it with reward -1; every other move earns `step_reward` (default 0;
    a negative one is a cost per step). ``reset(options={"cell": k})`` starts at cell `k`
    instead of `start`, any cell but a wall, a hole or the goal.
    """

    def __init__(self, rows: int = 4, cols: int = 4, walls: Iterable[Cell] = (),
                 holes: Iterable[Cell] = (), goal: Cell | None = None, start: Cell = (0, 0),
                 slip: float = 0.0, max_episode_steps: int | None = 100,
                 step_reward: float = 0.0):
        super().__init__()
        if not (isinstance(rows, int) and isinstance(cols, int) and rows > 0 and cols > 0):
            raise ArgumentError(f"a GridWorld has a positive number of rows and columns, got "
                                f"{rows!r} x {cols!r}")
        if not 0.0 <= slip <= 1.0:
            raise ArgumentError(f"slip is a probability, got {slip!r}")
        self.rows, self.cols, self.slip, self.step_reward = rows, cols, slip, step_reward
        self.max_episode_steps = max_episode_steps
        self.walls = {self._checked(cell, "wall") for cell in walls}
        self.holes = {self._checked(cell, "hole") for cell in holes}
        self.goal = self._checked((rows - 1, cols - 1) if goal is None else goal, "goal")
        self.start = self._checked(start, "start")
        if self.walls & self.holes or self.goal in self.walls | self.holes:
            raise ArgumentError("walls, holes and the goal must be different cells")
        if self.start in self.walls | self.holes or self.start == self.goal:
            raise ArgumentError(f"the start {self.start} is a wall, a hole or the goal")
        self.observation_space = Discrete(rows * cols)
        self.action_space = Discrete(4)
        self.position = self.start

    def _checked(self, cell: Cell, what: str) -> Cell:
        """`cell` as a (row, column) tuple, if it is inside the grid."""
        row, col = cell
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise ArgumentError(f"the {what} {tuple(cell)} is outside the {self.rows} x "
                                f"{self.cols} grid")
        return int(row), int(col)

    def index(self, cell: Cell) -> int:
        """The observation for `cell`: ``row * cols + col``."""
        return cell[0] * self.cols + cell[1]

    def _reset(self, options: dict[str, Any]) -> int:
        given = options.get("cell")
        if given is None:
            self.position = self.start
        else:
            if not self.observation_space.contains(given):
                raise ArgumentError(f"no cell {given!r} in a grid of {self.rows * self.cols}")
            cell = divmod(given, self.cols)
            if cell in self.walls | self.holes or cell == self.goal:
                raise ArgumentError(f"cannot start at cell {given}, a wall, a hole or the goal")
            self.position = cell
        return self.index(self.position)

    def _step(self, action: int) -> tuple[int, float, bool, dict[str, Any]]:
        if self.slip and self.rng.random() < self.slip:
            action = (action + self.rng.choice((1, 3))) % 4
        d_row, d_col = MOVES[action]
        row, col = self.position[0] + d_row, self.position[1] + d_col
        if 0 <= row < self.rows and 0 <= col < self.cols and (row, col) not in self.walls:
            self.position = (row, col)
        if self.position == self.goal:
            return self.index(self.position), GOAL_REWARD, True, {}
        if self.position in self.holes:
            return self.index(self.position), HOLE_REWARD, True, {}
        return self.index(self.position), self.step_reward, False, {}

    def render_text(self) -> str:
        """The grid, a line per row: ``@`` the agent, ``#`` a wall, ``O`` a hole, ``G`` the
        goal, ``S`` the start (where the agent is not) and ``.`` the other cells."""
        def symbol(cell: Cell) -> str:
            if cell == self.position:
                return "@"
            if cell in self.walls:
                return "#"
            if cell in self.holes:
                return "O"
            return "G" if cell == self.goal else "S" if cell == self.start else "."

        return "\n".join("".join(symbol((row, col)) for col in range(self.cols))
                         for row in range(self.rows))
