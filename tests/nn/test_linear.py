"""Linear and Bilinear against PyTorch: state_dict layout, forward, gradients, init."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, np, torch


@pytest.mark.parametrize("bias", [True, False])
def test_linear(device, bias):
    x, = inputs_for("linear", (4, 5))
    check_twin(device, nn.Linear(5, 3, bias=bias, device=device),
               torch.nn.Linear(5, 3, bias=bias), [x])


def test_linear_batched_leading_dims(device):
    x, = inputs_for("linear3d", (2, 3, 5))
    check_twin(device, nn.Linear(5, 2, device=device), torch.nn.Linear(5, 2), [x])


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(device, bias):
    a, b = inputs_for("bilinear", (4, 3), (4, 2))
    check_twin(device, nn.Bilinear(3, 2, 5, bias=bias, device=device),
               torch.nn.Bilinear(3, 2, 5, bias=bias), [a, b])


def test_linear_default_init_bounds(device):
    pyburn.manual_seed(3)
    layer = nn.Linear(400, 300, device=device)
    bound = 1 / math.sqrt(400)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-bound, bound) has std bound / sqrt(3): 120,000 draws pin it to well under 1%
    assert abs(w.std() / (bound / math.sqrt(3)) - 1) < 0.01
    assert abs(w.mean()) < 0.01 * bound


def test_bilinear_default_init_bounds(device):
    layer = nn.Bilinear(16, 4, 8, device=device)
    bound = 1 / math.sqrt(16)
    assert np.abs(layer.weight.numpy()).max() <= bound
    assert np.abs(layer.bias.numpy()).max() <= bound


def test_linear_reproducible_across_devices():
    devices = pyburn.available_devices()
    weights = []
    for dev in devices:
        pyburn.manual_seed(11)
        weights.append(nn.Linear(7, 5, device=dev).state_dict())
    for other in weights[1:]:
        for key, value in weights[0].items():
            np.testing.assert_array_equal(value.numpy(), other[key].numpy())


def test_linear_dtype_argument(device):
    if "float64" not in device.caps:
        pytest.skip("needs float64")
    layer = nn.Linear(3, 2, device=device, dtype=pyburn.float64)
    assert layer.weight.dtype is pyburn.float64 and layer.bias.dtype is pyburn.float64
    assert layer(pyburn.ones(1, 3, dtype=pyburn.float64, device=device)).dtype is pyburn.float64


def test_linear_wrong_input_size(device):
    layer = nn.Linear(3, 2, device=device)
    with pytest.raises(pyburn.ShapeError, match="in_features"):
        layer(pyburn.ones(2, 4, device=device))
