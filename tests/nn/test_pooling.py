"""Pooling layers against PyTorch: repr, forward, indices and gradients."""

from __future__ import annotations

import pytest

from pyburn import nn

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
