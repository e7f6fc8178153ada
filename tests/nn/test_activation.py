"""Activation modules against PyTorch: repr, forward and gradients (PReLU's weight too)."""

from __future__ import annotations

import pytest

import pyburn
from pyburn import nn

from .twins import check_twin, inputs_for, torch

ACTIVATIONS = {
    "ReLU": ((), {}), "ReLU-inplace": ((), {"inplace": True}), "ReLU6": ((), {}),
    "LeakyReLU": ((0.2,), {}), "ELU": ((), {"alpha": 0.5}), "SELU": ((), {}),
    "CELU": ((1.5,), {}), "GELU": ((), {}), "GELU-tanh": ((), {"approximate": "tanh"}),
    "Sigmoid": ((), {}), "Tanh": ((), {}), "SiLU": ((), {}), "Mish": ((), {}),
    "Softplus": ((), {"beta": 2.0, "threshold": 3.0}), "Softsign": ((), {}),
    "Hardsigmoid": ((), {}), "Hardswish": ((), {}), "Hardtanh": ((-0.5, 1.5), {}),
    "LogSigmoid": ((), {}), "Tanhshrink": ((), {}), "Softshrink": ((0.3,), {}),
    "Hardshrink": ((), {}), "Threshold": ((0.1, -2.0), {}), "GLU": ((), {"dim": 2}),
    "Softmax": ((), {"dim": 1}), "LogSoftmax": ((), {"dim": -1}), "Softmin": ((0,), {}),
    "Softmax2d": ((), {}), "PReLU": ((), {}), "PReLU-channels": ((3,), {"init": 0.1}),
}


@pytest.mark.parametrize("case", ACTIVATIONS)
def test_activation_matches_pytorch(device, case):
    name = case.split("-")[0]
    args, kwargs = ACTIVATIONS[case]
    extra = {"device": device} if name == "PReLU" else {}
    x, = inputs_for(case, (2, 3, 4, 2), low=-4.0, high=4.0)
    # PyTorch cannot differentiate an in-place op on a leaf; pyburn's results are new tensors
    check_twin(device, getattr(nn, name)(*args, **kwargs, **extra),
               getattr(torch.nn, name)(*args, **kwargs), [x], grad="inplace" not in kwargs)


def test_functional_activations_all_have_modules():
    """Every activation of nn.functional has a module (under PyTorch's class name)."""
    names = {"celu": "CELU", "elu": "ELU", "gelu": "GELU", "glu": "GLU", "hardshrink": "Hardshrink",
             "hardsigmoid": "Hardsigmoid", "hardswish": "Hardswish", "hardtanh": "Hardtanh",
             "leaky_relu": "LeakyReLU", "log_softmax": "LogSoftmax", "logsigmoid": "LogSigmoid",
             "mish": "Mish", "prelu": "PReLU", "relu": "ReLU", "relu6": "ReLU6", "selu": "SELU",
             "sigmoid": "Sigmoid", "silu": "SiLU", "softmax": "Softmax", "softmin": "Softmin",
             "softplus": "Softplus", "softshrink": "Softshrink", "softsign": "Softsign",
             "tanh": "Tanh", "tanhshrink": "Tanhshrink", "threshold": "Threshold"}
    for function, module in names.items():
        assert hasattr(nn.functional, function) and issubclass(getattr(nn, module), nn.Module)


def test_prelu_parameter(device):
    layer = nn.PReLU(2, init=0.5, device=device.autodiff())
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    assert layer.weight.tolist() == [0.5, 0.5] and layer.weight.requires_grad
    assert layer.num_params() == 2
    with pytest.raises(pyburn.ShapeError):
        layer(pyburn.ones(1, 3, device=device.autodiff()))
