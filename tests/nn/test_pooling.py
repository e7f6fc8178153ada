"""Pooling layers against PyTorch: repr, forward, indices and gradients."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn import nn
from pyburn.nn import functional as F

from .twins import check_twin, inputs_for, torch

POOLS = {
    "max1d": ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, (2, 2, 7)),
    "max1d-indices": ("MaxPool1d", (2,), {"return_indices": True}, (1, 2, 6)),
    "max2d": ("MaxPool2d", (2,), {}, (2, 3, 4, 6)),
    "max2d-ceil-dilated": ("MaxPool2d", ((3, 2),), {"stride": 2, "dilation": (1, 2),
                                                    "ceil_mode": True}, (1, 2, 7, 7)),
    "max2d-indices": ("MaxPool2d", (2,), {"stride": 1, "return_indices": True}, (1, 1, 3, 4)),
    "max3d": ("MaxPool3d", (2,), {}, (1, 1, 4, 4, 4)),
    "avg1d": ("AvgPool1d", (3,), {"stride": 2, "padding": 1}, (2, 2, 7)),
    "avg1d-no-pad-count": ("AvgPool1d", (3,), {"padding": 1, "count_include_pad": False},
                           (1, 1, 6)),
    "avg2d": ("AvgPool2d", (2,), {}, (2, 3, 4, 4)),
    "avg2d-ceil-divisor": ("AvgPool2d", (3,), {"stride": 2, "ceil_mode": True,
                                              "divisor_override": 4}, (1, 2, 6, 6)),
    "avg3d": ("AvgPool3d", ((1, 2, 2),), {"padding": (0, 1, 1)}, (1, 1, 2, 3, 3)),
    "aavg1d": ("AdaptiveAvgPool1d", (3,), {}, (2, 2, 7)),
    "aavg2d": ("AdaptiveAvgPool2d", ((2, 3),), {}, (2, 2, 5, 7)),
    "aavg2d-none": ("AdaptiveAvgPool2d", ((None, 2),), {}, (1, 2, 3, 5)),
    "aavg3d": ("AdaptiveAvgPool3d", (1,), {}, (1, 2, 2, 3, 3)),
    "amax1d": ("AdaptiveMaxPool1d", (2,), {}, (1, 2, 5)),
    "amax2d": ("AdaptiveMaxPool2d", ((2, 2),), {"return_indices": True}, (1, 2, 5, 4)),
    "amax3d": ("AdaptiveMaxPool3d", (2,), {}, (1, 1, 3, 3, 3)),
}


@pytest.mark.parametrize("case", POOLS)
def test_pool_matches_pytorch(device, case):
    name, args, kwargs, shape = POOLS[case]
    x, = inputs_for(case, shape)
    check_twin(device, getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs),
               [x])


@pytest.mark.parametrize("values, geometry", [
    ([[[[-math.inf] * 5] * 4]], {"kernel_size": 3, "stride": 2, "padding": 1}),
    ([[[[1.0, math.nan, 3.0, 2.0], [0.0, 5.0, 5.0, -1.0]]]], {"kernel_size": 2}),
], ids=["all-minus-inf-padded", "nan-wins"])
def test_max_pool_positions_at_the_edges_match_pytorch(device, values, geometry):
    """A window of nothing but -inf (whose argmax may land in the padding) names its first
    element inside the input; NaN wins."""
    got = F.max_pool2d(pyburn.tensor(values, device=device), return_indices=True, **geometry)
    want = torch.nn.functional.max_pool2d(torch.tensor(values), return_indices=True,
                                          **geometry)
    assert got[1].tolist() == want[1].tolist()
    assert str(got[0].tolist()) == str(want[0].tolist())  # NaN and -inf alike
