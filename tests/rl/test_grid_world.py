"""pyburn.rl's GridWorld: without slipping, on FrozenLake's 4x4 map, its transitions equal
gymnasium's FrozenLake-v1 (is_slippery=False) for every state and action; on a map of
walls and holes, value iteration over the transitions found by stepping from every cell
agrees with an independent shortest path, and, with slipping, with the mean return of its
greedy policy; the slip's directions follow their probabilities; the picture and misuse."""

from __future__ import annotations

from collections import Counter, deque

import numpy as np
import pytest

import pyburn
from pyburn.rl import GridWorld

gymnasium = pytest.importorskip("gymnasium")
stats = pytest.importorskip("scipy.stats")

FROZEN_HOLES = [(1, 1), (1, 3), (2, 3), (3, 0)]
#: a 4 x 5 map: S start, # wall, O hole, G goal (the shortest way is 7 moves)
WORLD = dict(rows=4, cols=5, walls=[(0, 3), (1, 1), (3, 2)], holes=[(1, 3), (2, 4), (3, 0)],
             goal=(3, 4))
HORIZON = 30
EPISODES = 8000


def test_frozen_lake_transitions_are_gymnasiums():
    theirs = gymnasium.make("FrozenLake-v1", map_name="4x4", is_slippery=False).unwrapped
    ours = GridWorld(holes=FROZEN_HOLES)
    terminal = {ours.index(cell) for cell in FROZEN_HOLES} | {ours.index(ours.goal)}
    ours_for = {0: 3, 1: 2, 2: 1, 3: 0}  # FrozenLake's left, down, right, up
    for state in range(16):
        for action in range(4):
            [(probability, their_next, their_reward, their_end)] = theirs.P[state][action]
            assert probability == 1.0
            if state in terminal:  # gymnasium's absorbing states; ours refuse to start there
                assert (their_next, their_end) == (state, True)
                with pytest.raises(pyburn.PyburnError, match="cannot start"):
                    ours.reset(options={"cell": state})
                continue
            ours.reset(options={"cell": state})
            got, reward, ended, _, _ = ours.step(ours_for[action])
            assert (got, ended) == (their_next, their_end)
            assert their_reward == (got == 15)
            assert reward == (1.0 if got == 15 else -1.0 if got in terminal else 0.0)


def moves_of(env: GridWorld) -> np.ndarray:
    """next[a, s]: the cell where action a leads from cell s without slipping, found by
    stepping the environment from every cell it can start at (-1 elsewhere)."""
    cells = env.rows * env.cols
    moves = np.full((4, cells), -1)
    for state in range(cells):
        for action in range(4):
            try:
                env.reset(options={"cell": state})
            except pyburn.PyburnError:
                continue  # a wall, a hole or the goal
            moves[action, state] = env.step(action)[0]
    return moves


def value_iteration(env: GridWorld, moves: np.ndarray, slip: float) -> np.ndarray:
    """q[t, s, a]: the best expected return from cell s with action a at step t of an
    episode of HORIZON steps, under the documented slipping (to each side with slip / 2)."""
    cells = env.rows * env.cols
    reward = np.full(cells, env.step_reward)
    ends = np.zeros(cells, bool)
    for cell in env.holes:
        reward[env.index(cell)], ends[env.index(cell)] = -1.0, True
    reward[env.index(env.goal)], ends[env.index(env.goal)] = 1.0, True
    q = np.zeros((HORIZON, cells, 4))
    later = np.zeros(cells)  # the value of each cell one step later
    for t in reversed(range(HORIZON)):
        gain = np.where(ends, reward, reward + later)  # entering a cell, then going on
        for action in range(4):
            chances = [(1 - slip, action), (slip / 2, (action + 1) % 4),
                       (slip / 2, (action + 3) % 4)]
            q[t, :, action] = sum(p * gain[np.maximum(moves[a], 0)] for p, a in chances)
        later = q[t].max(axis=1)
    return q


def shortest_way(env: GridWorld) -> int:
    """Moves from the start to the goal around walls and holes (breadth first, from the
    map alone)."""
    seen, queue = {env.start: 0}, deque([env.start])
    while queue:
        row, col = cell = queue.popleft()
        for nxt in ((row - 1, col), (row, col + 1), (row + 1, col), (row, col - 1)):
            if (0 <= nxt[0] < env.rows and 0 <= nxt[1] < env.cols and nxt not in seen
                    and nxt not in env.walls and nxt not in env.holes):
                seen[nxt] = seen[cell] + 1
                queue.append(nxt)
    return seen[env.goal]


def run_greedy(env: GridWorld, q: np.ndarray) -> float:
    """The return of one episode that takes the best action of `q` at each step."""
    state, _ = env.reset()
    total, t = 0.0, 0
    while True:
        state, reward, terminated, truncated, _ = env.step(int(q[t, state].argmax()))
        total, t = total + reward, t + 1
        if terminated or truncated:
            return total


def test_value_iteration_without_slipping_finds_the_shortest_way():
    env = GridWorld(**WORLD, step_reward=-0.04, max_episode_steps=HORIZON)
    q = value_iteration(env, moves_of(env), slip=0.0)
    moves = shortest_way(env)
    assert moves == 7
    expected = 1.0 + (moves - 1) * env.step_reward
    assert q[0, env.index(env.start)].max() == pytest.approx(expected)
    assert run_greedy(env, q) == pytest.approx(expected) and env.elapsed == moves


def test_the_greedy_policy_of_value_iteration_earns_its_value_when_slipping():
    plain = GridWorld(**WORLD, max_episode_steps=HORIZON)
    env = GridWorld(**WORLD, slip=0.2, max_episode_steps=HORIZON)
    q = value_iteration(env, moves_of(plain), slip=0.2)
    env.reset(seed=0)
    returns = [run_greedy(env, q) for _ in range(EPISODES)]
    value = q[0, env.index(env.start)].max()
    assert 0.5 < value < 1.0  # the holes cost something
    assert np.mean(returns) == pytest.approx(value, abs=4 * np.std(returns) / EPISODES**0.5)


def test_slips_go_to_either_side_with_half_the_slip_each():
    env = GridWorld(**WORLD, slip=0.3)
    env.reset(seed=1)
    start = env.index((2, 2))
    counts: Counter[int] = Counter()
    for _ in range(3000):
        env.reset(options={"cell": start})
        counts[env.step(0)[0]] += 1  # up to (1, 2), else left to (2, 1) or right to (2, 3)
    cells = [env.index(cell) for cell in ((1, 2), (2, 1), (2, 3))]
    assert set(counts) == set(cells)
    observed = [counts[cell] for cell in cells]
    assert stats.chisquare(observed, [3000 * 0.7, 3000 * 0.15, 3000 * 0.15]).pvalue > 1e-3


def test_the_picture_and_misuse():
    env = GridWorld(**WORLD)
    env.reset(options={"cell": 2})
    assert env.render_text() == "S.@#.\n.#.O.\n....O\nO.#.G"
    with pytest.raises(pyburn.PyburnError, match="outside"):
        GridWorld(walls=[(4, 0)])
    with pytest.raises(pyburn.PyburnError, match="different cells"):
        GridWorld(holes=[(1, 1)], walls=[(1, 1)])
    with pytest.raises(pyburn.PyburnError, match="start"):
        GridWorld(walls=[(0, 0)])
    with pytest.raises(pyburn.PyburnError, match="probability"):
        GridWorld(slip=1.5)
    with pytest.raises(pyburn.PyburnError, match="no cell"):
        env.reset(options={"cell": 20})
    with pytest.raises(pyburn.PyburnError, match="action space"):
        env.step(4)
