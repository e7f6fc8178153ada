"""Parameter: a Tensor subclass that shares its data's values and requires grad exactly on
autodiff devices."""

from __future__ import annotations

import pickle

import pytest

import pyburn
from pyburn import nn


def test_parameter_on_plain_and_autodiff_devices(device):
    plain = nn.Parameter(pyburn.ones(2, device=device))
    assert isinstance(plain, pyburn.Tensor) and not plain.requires_grad
    p = nn.Parameter(pyburn.ones(2, device=device.autodiff()))
    assert p.requires_grad and p.is_leaf and p.grad is None
    frozen = nn.Parameter(pyburn.ones(2, device=device.autodiff()), requires_grad=False)
    assert not frozen.requires_grad
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0]
    assert type(p * 3) is pyburn.Tensor and type(p.detach()) is pyburn.Tensor


def test_parameter_shares_values_and_shape(device):
    data = pyburn.arange(6.0, device=device).reshape(2, 3)
    p = nn.Parameter(data)
    assert p.shape == (2, 3) and p.dtype is pyburn.float32 and p.device is device
    assert p.tolist() == data.tolist()
    assert repr(p).startswith("Parameter containing:\n")


def test_parameter_checks_its_data():
    with pytest.raises(pyburn.ArgumentError, match="pyburn Tensor"):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(pyburn.DTypeError, match="requires_grad=False"):
        nn.Parameter(pyburn.ones(2, dtype=pyburn.int32, device="flex"))
    ints = nn.Parameter(pyburn.ones(2, dtype=pyburn.int32, device="flex"), requires_grad=False)
    assert ints.dtype is pyburn.int32


def test_parameter_pickles_as_parameter(device):
    p = nn.Parameter(pyburn.tensor([1.5, -2.0], device=device.autodiff()))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad and q.tolist() == [1.5, -2.0]
    assert q.device is device.autodiff()
