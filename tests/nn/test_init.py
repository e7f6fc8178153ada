"""pyburn.nn.init: gains and fans equal PyTorch's, distributions have the right bounds, mean
and spread, fills keep the tensor object, and manual_seed reproduces them on every device."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn import nn
from pyburn.nn import init

from .twins import np, torch

SHAPES = [(2, 3), (4, 3, 5), (8, 2, 3, 3), (6, 4, 1, 2, 3), (1, 0)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_fans_match_pytorch(shape):
    ours = init.calculate_fan_in_and_fan_out(pyburn.zeros(*shape, device="flex"))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(*shape))


def test_fans_need_two_dims():
    with pytest.raises(pyburn.ShapeError, match="at least 2 dims"):
        init.calculate_fan_in_and_fan_out(pyburn.zeros(3, device="flex"))


@pytest.mark.parametrize("name,param", [
    ("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
    ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
    ("leaky_relu", math.sqrt(5)), ("selu", None)])
def test_gains_match_pytorch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param), rel=1e-15)


def test_unknown_gain():
    with pytest.raises(pyburn.ArgumentError, match="unknown nonlinearity"):
        init.calculate_gain("swish")


N = 40_000  # draws per statistical check: the sample std is then within 0.4% (1 sigma)


def _draws(device, fill, shape=(200, 200)):
    pyburn.manual_seed(1234)
    t = pyburn.zeros(*shape, device=device)
    assert fill(t) is t
    return t.numpy().astype(np.float64)


def _check_uniform(values, bound):
    assert values.min() >= -bound and values.max() < bound
    assert values.max() > 0.99 * bound and values.min() < -0.99 * bound
    assert abs(values.mean()) < 0.02 * bound
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)


def _check_normal(values, std, mean=0.0):
    assert values.mean() == pytest.approx(mean, abs=0.02 * std)
    assert values.std() == pytest.approx(std, rel=0.02)


def test_uniform_and_normal(device):
    values = _draws(device, lambda t: init.uniform_(t, -3.0, 5.0))
    assert values.min() >= -3 and values.max() < 5
    assert values.mean() == pytest.approx(1.0, abs=0.05)
    assert values.std() == pytest.approx(8 / math.sqrt(12), rel=0.02)
    _check_normal(_draws(device, lambda t: init.normal_(t, 2.0, 0.5)), 0.5, mean=2.0)


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("leaky_relu", 0.0), ("relu", 0.0),
                                            ("leaky_relu", math.sqrt(5))])
def test_kaiming(device, mode, nonlinearity, a):
    shape = (100, 50, 2, 4)  # fan_in 400, fan_out 800
    fan = 400 if mode == "fan_in" else 800
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    _check_uniform(_draws(device, lambda t: init.kaiming_uniform_(t, a, mode, nonlinearity),
                          shape), math.sqrt(3) * std)
    _check_normal(_draws(device, lambda t: init.kaiming_normal_(t, a, mode, nonlinearity),
                         shape), std)


def test_xavier(device):
    shape = (400, 100)
    std = 0.7 * math.sqrt(2 / 500)
    _check_uniform(_draws(device, lambda t: init.xavier_uniform_(t, gain=0.7), shape),
                   math.sqrt(3) * std)
    _check_normal(_draws(device, lambda t: init.xavier_normal_(t, gain=0.7), shape), std)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 2, 2, 2), (5, 5)], ids=str)
def test_orthogonal(device, shape):
    t = init.orthogonal_(pyburn.zeros(*shape, device=device), gain=2.0)
    flat = t.numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
    small = min(flat.shape)
    gram = flat.T @ flat if flat.shape[0] >= flat.shape[1] else flat @ flat.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


def test_orthogonal_is_haar_distributed(device):
    # the entries of a Haar orthogonal n x n matrix have mean 0 and variance 1/n
    pyburn.manual_seed(9)
    values = np.concatenate([init.orthogonal_(pyburn.zeros(20, 20, device=device)).numpy()
                             .ravel() for _ in range(20)])
    assert abs(values.mean()) < 0.01 and values.var() == pytest.approx(1 / 20, rel=0.05)


def test_constant_fills(device):
    t = pyburn.zeros(2, 3, device=device)
    assert init.constant_(t, 1.5).tolist() == [[1.5] * 3] * 2
    assert init.ones_(t).tolist() == [[1.0] * 3] * 2
    assert init.zeros_(t).tolist() == [[0.0] * 3] * 2
    assert init.eye_(t).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    counter = pyburn.zeros(2, dtype=pyburn.int32, device=device)
    assert init.constant_(counter, 3).tolist() == [3, 3]


def test_fills_parameters_in_place_without_recording(device):
    layer = nn.Linear(3, 2, device=device.autodiff())
    weight = layer.weight
    init.xavier_normal_(layer.weight)
    init.orthogonal_(layer.weight)
    assert layer.weight is weight and weight.is_leaf and weight.requires_grad
    layer(pyburn.ones(1, 3, device=device.autodiff())).sum().backward()
    assert weight.grad is not None


def test_same_seed_same_values_everywhere():
    results = []
    for dev in pyburn.available_devices():
        pyburn.manual_seed(42)
        t = pyburn.zeros(50, 30, device=dev)
        results.append([init.kaiming_uniform_(t).numpy(), init.normal_(t.clone()).numpy()])
    for other in results[1:]:
        np.testing.assert_array_equal(other[0], results[0][0])
        np.testing.assert_allclose(other[1], results[0][1], rtol=1e-6, atol=1e-6)


def test_generator_argument(device):
    a = init.uniform_(pyburn.zeros(10, device=device), generator=pyburn.Generator(3))
    b = init.uniform_(pyburn.zeros(10, device=device), generator=pyburn.Generator(3))
    assert a.tolist() == b.tolist()


def test_errors():
    with pytest.raises(pyburn.DTypeError, match="floating-point"):
        init.normal_(pyburn.zeros(3, dtype=pyburn.int32, device="flex"))
    with pytest.raises(pyburn.ArgumentError, match="fan_in"):
        init.kaiming_uniform_(pyburn.zeros(3, 3, device="flex"), mode="fan")
    with pytest.raises(pyburn.ArgumentError, match="must not exceed"):
        init.uniform_(pyburn.zeros(3, device="flex"), 1.0, 0.0)
    with pytest.raises(pyburn.ShapeError, match="2-d"):
        init.eye_(pyburn.zeros(3, device="flex"))


def test_skipped_draws_nothing_and_fixed_fills_still_run(device):
    pyburn.manual_seed(3)
    with init.skipped():
        layer = nn.Linear(4, 3, device=device)
        w = init.orthogonal_(pyburn.zeros(3, 3, device=device))
        ones = init.ones_(pyburn.zeros(2, device=device))
    assert layer.weight.abs().sum().item() == 0.0 and w.abs().sum().item() == 0.0
    assert ones.tolist() == [1.0, 1.0]
    after = pyburn.rand(2, device=device).tolist()  # the generator did not move
    pyburn.manual_seed(3)
    assert pyburn.rand(2, device=device).tolist() == after
    assert nn.Linear(4, 3, device=device).weight.abs().sum().item() > 0  # on again outside


def test_strict_create_skips_drawing_weights(tmp_path, monkeypatch):
    from pyburn import models, store

    saved = models.create("mnist-mlp", device="flex", hidden=8)
    path = tmp_path / "mlp.safetensors"
    store.save(saved, str(path))
    drawn = []
    monkeypatch.setattr(init, "rand", lambda *a, **k: drawn.append(a) or pyburn.rand(*a, **k))
    loaded = models.create("mnist-mlp", weights=str(path), device="flex", hidden=8)
    assert drawn == [] and loaded.fc1.weight.tolist() == saved.fc1.weight.tolist()
    models.create("mnist-mlp", weights=str(path), device="flex", hidden=8, strict=False)
    assert drawn  # a partial load keeps random weights where the file has none
