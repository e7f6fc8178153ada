"""Shape, resolution and padding layers against PyTorch."""

from __future__ import annotations

import pytest

from pyburn import nn

from .twins import check_twin, inputs_for, torch

LAYERS = {
    "Identity": ((), {}, (2, 3)),
    "Flatten": ((), {}, (2, 3, 2, 2)),
    "Flatten-range": ((0, 2), {}, (2, 3, 2, 2)),
    "Unflatten": ((1, (2, 3)), {}, (2, 6, 2)),
    "Upsample": ((), {"scale_factor": 2}, (1, 2, 3, 3)),
    "Upsample-size": ((), {"size": (5, 4), "mode": "bilinear"}, (1, 1, 3, 3)),
    "Upsample-corners": ((), {"scale_factor": 1.5, "mode": "linear", "align_corners": True},
                         (1, 2, 4)),
    "Upsample-bicubic": ((), {"scale_factor": (2, 1), "mode": "bicubic"}, (1, 1, 3, 3)),
    "PixelShuffle": ((2,), {}, (1, 8, 2, 3)),
    "PixelUnshuffle": ((2,), {}, (1, 2, 4, 6)),
    "ZeroPad1d": ((2,), {}, (1, 2, 3)),
    "ZeroPad2d": (((1, 0, 2, 1),), {}, (1, 1, 2, 3)),
    "ZeroPad3d": ((1,), {}, (1, 1, 2, 2, 2)),
    "ConstantPad1d": (((1, 2), 3.5), {}, (2, 3)),
    "ConstantPad2d": ((1, -1.0), {}, (1, 2, 2)),
    "ConstantPad3d": ((1, 0.5), {}, (1, 1, 2, 2, 2)),
    "ReflectionPad1d": ((2,), {}, (1, 2, 4)),
    "ReflectionPad2d": (((1, 2, 0, 1),), {}, (1, 1, 3, 4)),
    "ReflectionPad3d": ((1,), {}, (1, 1, 2, 3, 3)),
    "ReplicationPad1d": (((0, 3),), {}, (1, 2, 3)),
    "ReplicationPad2d": ((2,), {}, (1, 1, 2, 2)),
    "ReplicationPad3d": ((1,), {}, (1, 1, 2, 2, 2)),
    "CircularPad1d": ((1,), {}, (1, 2, 3)),
    "CircularPad2d": (((1, 1, 2, 0),), {}, (1, 1, 3, 3)),
    "CircularPad3d": ((1,), {}, (1, 1, 2, 2, 2)),
}


@pytest.mark.parametrize("case", LAYERS)
def test_layer_matches_pytorch(device, case):
    name = case.split("-")[0]
    args, kwargs, shape = LAYERS[case]
    x, = inputs_for(case, shape)
    check_twin(device, getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs),
               [x])


def test_identity_ignores_arguments():
    layer = nn.Identity(3, flag=True)
    assert layer("anything") == "anything" and repr(layer) == "Identity()"
