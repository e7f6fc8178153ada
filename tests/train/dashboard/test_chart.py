"""The dashboard's text charts (`pyburn.train.dashboard.chart`) against numpy: smoothing is
TensorBoard's debiased moving average, downsampling keeps means of equal runs, and a line
lights the Braille dots along its path and nothing else."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyburn.train.dashboard.chart import bounds, downsample, draw, smooth

BRAILLE = 0x2800


def test_smoothing_is_the_debiased_moving_average():
    rng = np.random.default_rng(0)
    ys = rng.standard_normal(50)
    weight = 0.8
    average = np.zeros(50)
    running = 0.0
    for i, y in enumerate(ys):
        running = weight * running + (1 - weight) * y
        average[i] = running / (1 - weight ** (i + 1))
    got = smooth(list(enumerate(ys.tolist())), weight)
    np.testing.assert_allclose([y for _, y in got], average, rtol=1e-12)
    assert [x for x, _ in got] == list(range(50))


def test_smoothing_passes_values_that_are_not_finite_through():
    got = smooth([(0, 1.0), (1, math.nan), (2, 3.0)], 0.5)
    assert math.isnan(got[1][1]) and got[0][1] == 1.0
    assert got[2][1] == pytest.approx((0.25 * 1.0 + 0.5 * 3.0) / 0.75)


def test_downsampling_keeps_the_means_of_equal_runs():
    points = [(float(x), float(x * x)) for x in range(1000)]
    got = downsample(points, 250)
    want = np.array(points).reshape(250, 4, 2).mean(axis=1)
    np.testing.assert_allclose(np.array(got), want)
    assert downsample(points[:10], 250) == points[:10]


def test_a_rising_line_lights_the_diagonal_dots_only():
    rows = draw({"a": [(0.0, 0.0), (1.0, 1.0)]}, width=4, height=2)
    lit = set()
    for r, row in enumerate(rows):
        for c, (char, owner) in enumerate(row):
            bits = ord(char) - BRAILLE if char != " " else 0
            for column, masks in enumerate(((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))):
                for dot, mask in enumerate(masks):
                    if bits & mask:
                        lit.add((2 * c + column, 4 * r + dot))
                        assert owner == 0
    # 8 x 8 dots: from the bottom-left (0, 7) to the top-right (7, 0), one dot per column
    assert lit == {(x, 7 - x) for x in range(8)}


def test_the_later_series_owns_a_shared_cell_and_empty_input_draws_blank():
    rows = draw({"a": [(0, 0.0), (1, 0.0)], "b": [(0, 0.0), (1, 0.0)]}, width=3, height=1)
    assert {owner for _, owner in rows[0]} == {1}
    assert draw({}, 5, 2) == [[(" ", None)] * 5] * 2
    assert draw({"a": [(0, math.nan)]}, 2, 1) == [[(" ", None)] * 2]


def test_a_flat_series_gets_a_height():
    assert bounds({"a": [(0, 2.0), (5, 2.0)]}) == (0, 5, 1.5, 2.5)
