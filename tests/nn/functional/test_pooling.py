"""Max, average and adaptive pooling against PyTorch: values, indices and gradients."""

from __future__ import annotations

import math

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import TF, raises

MAX2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1),
    dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=2, dilation=2),
    dict(kernel_size=3, stride=2, padding=1, dilation=(1, 2)),
    dict(kernel_size=2, stride=[]),
]


@pytest.mark.parametrize("options", MAX2D, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5)], ids=str)
def test_max_pool2d(ref, options, shape):
    ref.check(F.max_pool2d, TF.max_pool2d, ref.floats(*shape), **options)
    ref.check(F.max_pool2d, TF.max_pool2d, ref.floats(*shape), return_indices=True, **options)


@pytest.mark.parametrize("options", [dict(kernel_size=3), dict(kernel_size=2, stride=1),
                                     dict(kernel_size=4, stride=3, padding=2, ceil_mode=True),
                                     dict(kernel_size=2, dilation=3)], ids=str)
def test_max_pool1d(ref, options):
    ref.check(F.max_pool1d, TF.max_pool1d, ref.floats(2, 3, 11), return_indices=True, **options)


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_with_ceil_mode_a_window_wider_than_the_input_counts_once(ref, pool):
    # 2 x 3 under a 3 x 3 window: PyTorch gives one window, partly past the edge
    ref.check(getattr(F, pool), getattr(TF, pool), ref.floats(1, 2, 2, 3), kernel_size=3,
              stride=2, ceil_mode=True)


def test_max_pool3d(ref):
    ref.check(F.max_pool3d, TF.max_pool3d, ref.floats(2, 2, 5, 4, 6), kernel_size=(2, 3, 2),
              stride=(1, 2, 2), padding=(1, 1, 0), return_indices=True)


def test_max_pool_first_of_ties_and_nan(ref):
    x = ref.tensor([[[[1.0, 1.0, 0.0], [1.0, math.nan, 2.0], [3.0, 3.0, 0.0]]]])
    ref.check(F.max_pool2d, TF.max_pool2d, x, kernel_size=2, stride=1, return_indices=True,
              grad=False)


AVG2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=3, stride=1, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 0)),
    dict(kernel_size=2, divisor_override=3),
]


@pytest.mark.parametrize("options", AVG2D, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5)], ids=str)
def test_avg_pool2d(ref, options, shape):
    ref.check(F.avg_pool2d, TF.avg_pool2d, ref.floats(*shape), **options)


@pytest.mark.parametrize("options", [dict(kernel_size=3), dict(kernel_size=4, stride=3,
                                                                padding=2, ceil_mode=True),
                                     dict(kernel_size=3, padding=1, count_include_pad=False)],
                         ids=str)
def test_avg_pool1d(ref, options):
    ref.check(F.avg_pool1d, TF.avg_pool1d, ref.floats(2, 3, 10), **options)


def test_avg_pool3d(ref):
    ref.check(F.avg_pool3d, TF.avg_pool3d, ref.floats(1, 2, 5, 4, 6), kernel_size=(2, 3, 2),
              stride=2, padding=(1, 1, 0), ceil_mode=True, count_include_pad=False)


ADAPTIVE = [((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 5), (3, 4)), ((3, 9, 9), 1), ((2, 3, 5, 7), 10),
            ((2, 3, 6, 5), (None, 2)), ((1, 2, 4, 4), (4, 4))]


@pytest.mark.parametrize("shape,size", ADAPTIVE, ids=str)
def test_adaptive_avg_pool2d(ref, shape, size):
    ref.check(F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, ref.floats(*shape), size)


@pytest.mark.parametrize("shape,size", ADAPTIVE, ids=str)
def test_adaptive_max_pool2d(ref, shape, size):
    ref.check(F.adaptive_max_pool2d, TF.adaptive_max_pool2d, ref.floats(*shape), size,
              return_indices=True)
    ref.check(F.adaptive_max_pool2d, TF.adaptive_max_pool2d, ref.floats(*shape), size)


@pytest.mark.parametrize("size", [1, 3, 4, 11])
def test_adaptive_pool1d(ref, size):
    ref.check(F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, ref.floats(2, 3, 7), size)
    ref.check(F.adaptive_max_pool1d, TF.adaptive_max_pool1d, ref.floats(2, 3, 7), size,
              return_indices=True)


def test_adaptive_pool3d(ref):
    ref.check(F.adaptive_avg_pool3d, TF.adaptive_avg_pool3d, ref.floats(1, 2, 5, 4, 6), (2, 3, 4))
    ref.check(F.adaptive_max_pool3d, TF.adaptive_max_pool3d, ref.floats(1, 2, 5, 4, 6), (3, 2, 4),
              return_indices=True)


def _z(device, *shape):
    return pyburn.zeros(shape, device=device)


BAD = [
    ("rank", pyburn.ShapeError, lambda d: F.max_pool2d(_z(d, 4, 4), 2), ("3 or 4", "(4, 4)")),
    ("kernel larger", pyburn.ShapeError,
     lambda d: F.max_pool2d(_z(d, 1, 1, 2, 4), 3), ("larger", "(1, 1, 2, 4)")),
    ("padding too large", pyburn.ArgumentError,
     lambda d: F.avg_pool2d(_z(d, 1, 1, 5, 5), 2, padding=2), ("half",)),
    ("zero kernel", pyburn.ArgumentError,
     lambda d: F.max_pool1d(_z(d, 1, 1, 5), 0), ("kernel_size",)),
    ("bad stride", pyburn.ArgumentError,
     lambda d: F.avg_pool1d(_z(d, 1, 1, 5), 2, stride=(1, 2)), ("stride",)),
    ("zero divisor", pyburn.ArgumentError,
     lambda d: F.avg_pool2d(_z(d, 1, 1, 4, 4), 2, divisor_override=0), ("divisor",)),
    ("adaptive size", pyburn.ArgumentError,
     lambda d: F.adaptive_avg_pool2d(_z(d, 1, 1, 4, 4), (1, 2, 3)), ("output_size",)),
    ("adaptive rank", pyburn.ShapeError,
     lambda d: F.adaptive_max_pool2d(_z(d, 4), 2), ("(4,)",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(device)
