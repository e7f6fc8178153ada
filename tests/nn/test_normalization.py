"""Normalisation layers against PyTorch: repr, buffers, forward in training and evaluation
mode (running statistics updated over several steps), gradients."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, torch

NORMS = {
    "bn1d-2d-input": ("BatchNorm1d", (3,), {}, (5, 3)),
    "bn1d-3d-input": ("BatchNorm1d", (3,), {"momentum": 0.3}, (4, 3, 2)),
    "bn1d-cumulative": ("BatchNorm1d", (2,), {"momentum": None}, (4, 2)),
    "bn2d": ("BatchNorm2d", (3,), {}, (2, 3, 3, 2)),
    "bn2d-no-affine": ("BatchNorm2d", (2,), {"affine": False}, (2, 2, 2, 2)),
    "bn2d-no-bias": ("BatchNorm2d", (2,), {"bias": False}, (2, 2, 2, 2)),
    "bn2d-untracked": ("BatchNorm2d", (2,), {"track_running_stats": False}, (3, 2, 2, 1)),
    "bn3d": ("BatchNorm3d", (2,), {"eps": 1e-3}, (2, 2, 2, 2, 2)),
    "in1d-unbatched": ("InstanceNorm1d", (3,), {"affine": True}, (3, 5)),
    "in2d": ("InstanceNorm2d", (2,), {}, (2, 2, 3, 3)),
    "in2d-tracked": ("InstanceNorm2d", (2,), {"affine": True, "track_running_stats": True},
                     (2, 2, 3, 2)),
    "in3d": ("InstanceNorm3d", (1,), {}, (1, 1, 2, 2, 2)),
    "ln": ("LayerNorm", (4,), {}, (3, 4)),
    "ln-2d-shape": ("LayerNorm", ((2, 3),), {"eps": 1e-3}, (2, 2, 3)),
    "ln-no-bias": ("LayerNorm", (4,), {"bias": False}, (2, 4)),
    "ln-no-affine": ("LayerNorm", (4,), {"elementwise_affine": False}, (2, 4)),
    "gn": ("GroupNorm", (2, 4), {}, (2, 4, 3)),
    "gn-no-affine": ("GroupNorm", (1, 2), {"affine": False}, (2, 2, 2, 2)),
    "rms": ("RMSNorm", (4,), {}, (3, 4)),
    "rms-eps": ("RMSNorm", ([2, 2],), {"eps": 1e-4}, (2, 2, 2)),
}


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("case", NORMS)
def test_norm_matches_pytorch(device, case, train):
    name, args, kwargs, shape = NORMS[case]
    ours = getattr(nn, name)(*args, **kwargs, device=device)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if not train and getattr(theirs, "running_mean", None) is not None:
        # evaluation with statistics that differ from the defaults
        with torch.no_grad():
            theirs.running_mean.uniform_(-1, 1)
            theirs.running_var.uniform_(0.5, 2)
    x, = inputs_for(case, shape)
    check_twin(device, ours, theirs, [x], train=train, steps=3 if train else 1)


def test_running_stats_are_updated_in_place(device):
    bn = nn.BatchNorm1d(2, device=device.autodiff())
    mean, count = bn.running_mean, bn.num_batches_tracked
    bn(pyburn.tensor([[0.0, 1.0], [2.0, 5.0]], device=device.autodiff())).sum().backward()
    assert bn.running_mean is mean and bn.num_batches_tracked is count
    assert mean.tolist() == pytest.approx([0.1, 0.3]) and count.item() == 1
    assert not mean.requires_grad and bn.weight.grad is not None
    bn.eval()
    bn(pyburn.ones(2, 2, device=device.autodiff()))
    assert count.item() == 1  # evaluation leaves the statistics alone
    bn.reset_running_stats()
    assert mean.tolist() == [0.0, 0.0] and count.item() == 0


def test_input_rank_is_checked():
    with pytest.raises(pyburn.ShapeError, match="BatchNorm2d expects a 4-d input"):
        nn.BatchNorm2d(3, device="flex")(pyburn.ones(2, 3, device="flex"))
    with pytest.raises(pyburn.ArgumentError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4, device="flex")
    with pytest.raises(pyburn.ArgumentError, match="normalized_shape"):
        nn.LayerNorm([], device="flex")
