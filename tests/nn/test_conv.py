"""Convolution layers against PyTorch: repr, state_dict, forward and gradients."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, torch

CONVS = {
    "1d-stride-pad": ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}, (2, 2, 7)),
    "1d-same-dilated": ("Conv1d", (2, 3, 3), {"padding": "same", "dilation": 2}, (1, 2, 8)),
    "1d-reflect": ("Conv1d", (2, 2, 3), {"padding": 2, "padding_mode": "reflect"}, (1, 2, 6)),
    "1d-circular-same": ("Conv1d", (1, 2, 4), {"padding": "same", "padding_mode": "circular"},
                         (1, 1, 6)),
    "2d": ("Conv2d", (3, 4, (3, 2)), {"stride": (2, 1), "padding": 1}, (2, 3, 5, 4)),
    "2d-groups-nobias": ("Conv2d", (4, 6, 2), {"groups": 2, "dilation": 2, "bias": False},
                         (1, 4, 5, 5)),
    "2d-valid-unbatched": ("Conv2d", (2, 2, 3), {"padding": "valid"}, (2, 4, 4)),
    "2d-replicate": ("Conv2d", (1, 2, 3), {"padding": (1, 2), "padding_mode": "replicate"},
                     (1, 1, 4, 3)),
    "3d": ("Conv3d", (2, 2, 2), {"padding": 1, "stride": 2}, (1, 2, 3, 3, 3)),
    "t1d": ("ConvTranspose1d", (2, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1},
            (2, 2, 4)),
    "t2d-groups": ("ConvTranspose2d", (4, 2, 2), {"stride": 2, "groups": 2, "dilation": 2},
                   (1, 4, 3, 3)),
    "t2d-nobias": ("ConvTranspose2d", (2, 3, (2, 3)), {"bias": False, "padding": (0, 1)},
                   (1, 2, 3, 3)),
    "t3d": ("ConvTranspose3d", (1, 2, 2), {"stride": 2}, (1, 1, 2, 2, 2)),
}


@pytest.mark.parametrize("case", CONVS)
def test_conv_matches_pytorch(device, case):
    name, args, kwargs, shape = CONVS[case]
    x, = inputs_for(case, shape)
    check_twin(device, getattr(nn, name)(*args, **kwargs, device=device),
               getattr(torch.nn, name)(*args, **kwargs), [x])


def test_conv_transpose_output_size(device):
    ours = nn.ConvTranspose2d(2, 1, 3, stride=2, padding=1, device=device)
    theirs = torch.nn.ConvTranspose2d(2, 1, 3, stride=2, padding=1)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x, = inputs_for("output_size", (1, 2, 3, 4))
    for size in ((5, 7), (6, 8), (1, 1, 6, 7)):
        got = ours(pyburn.tensor(x, device=device), output_size=size)
        want = theirs(torch.tensor(x), output_size=size)
        assert got.shape == tuple(want.shape)
    with pytest.raises(pyburn.ShapeError, match="not reachable"):
        ours(pyburn.tensor(x, device=device), output_size=(9, 9))


def test_conv_argument_errors():
    with pytest.raises(pyburn.ArgumentError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2, device="flex")
    with pytest.raises(pyburn.ArgumentError, match="padding_mode"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror", device="flex")
    with pytest.raises(pyburn.ArgumentError, match="stride 1"):
        nn.Conv1d(1, 1, 3, stride=2, padding="same", device="flex")
    with pytest.raises(pyburn.ArgumentError, match="padding_mode='zeros'"):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect", device="flex")


def test_conv_weight_layout_and_init_bounds(device):
    conv = nn.Conv2d(6, 8, (3, 5), groups=2, device=device)
    assert conv.weight.shape == (8, 3, 3, 5)
    bound = 1 / (3 * 3 * 5) ** 0.5  # fan_in = in_channels / groups * kernel elements
    assert abs(conv.weight).max().item() <= bound and abs(conv.bias).max().item() <= bound
    assert nn.ConvTranspose2d(6, 8, 3, groups=2, device=device).weight.shape == (6, 4, 3, 3)
