"""Activations and the softmax family against PyTorch: values and gradients."""

from __future__ import annotations

import math

import pytest

import pyburn
import pyburn.nn.functional as F

from .helpers import TF, Tol, assert_close, raises

# (name, keyword arguments): the same call on both sides
ELEMENTWISE = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {}), ("celu", {"alpha": 2.0}),
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}), ("softsign", {}),
    ("sigmoid", {}), ("tanh", {}), ("hardsigmoid", {}), ("hardswish", {}), ("hardtanh", {}),
    ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("logsigmoid", {}), ("tanhshrink", {}),
    ("softshrink", {}), ("softshrink", {"lambd": 1.5}), ("hardshrink", {}),
    ("hardshrink", {"lambd": 1.0}), ("threshold", {"threshold": 0.5, "value": -2.0}),
]


def _id(case) -> str:
    name, options = case
    return name + "".join(f"-{k}={v}" for k, v in options.items())


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_elementwise(ref, case):
    name, options = case
    ref.check(getattr(F, name), getattr(TF, name), ref.floats(3, 17, low=-5, high=5), **options)


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_elementwise_extremes(ref, case):
    """Large magnitudes (overflow of exp), zeros and the thresholds themselves."""
    name, options = case
    x = ref.tensor([-100.0, -30.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 30.0, 100.0])
    ref.check(getattr(F, name), getattr(TF, name), x, **options)


@pytest.mark.parametrize("case", ELEMENTWISE, ids=_id)
def test_elementwise_nan(ref, case):
    name, options = case
    ref.check(getattr(F, name), getattr(TF, name), ref.tensor([math.nan, 1.0]), grad=False,
              **options)


def test_elementwise_inplace_flag_returns_new_tensor(device):
    x = pyburn.tensor([-1.0, 1.0], device=device)
    y = F.relu(x, inplace=True)
    assert x.tolist() == [-1.0, 1.0] and y.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("weight_shape", [(1,), (3,), ()])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3), (5, 3, 2, 2)])
def test_prelu(ref, shape, weight_shape):
    ref.check(F.prelu, TF.prelu, ref.floats(*shape), ref.floats(*weight_shape, low=0, high=1))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu(ref, dim):
    ref.check(F.glu, TF.glu, ref.floats(4, 6, 2), dim=dim)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2),
                                       ((2, 0, 3), 2)])
def test_softmax_family(ref, fn, shape, dim):
    ref.check(getattr(F, fn), getattr(TF, fn), ref.floats(*shape, low=-10, high=10), dim=dim)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_is_stable(ref, fn):
    x = ref.tensor([[1000.0, 0.0, -1000.0], [-math.inf, 0.0, 1.0], [-math.inf] * 3])
    ref.check(getattr(F, fn), getattr(TF, fn), x, dim=1, grad=False)
    ref.check(getattr(F, fn), getattr(TF, fn), x[:2], dim=1)


def test_softmax_dtype(ref):
    if "float64" not in ref.device.caps:
        pytest.skip(f"{ref.device} lacks float64")
    got = F.softmax(pyburn.tensor([1, 2, 3], device=ref.device), dim=0, dtype=pyburn.float64)
    assert got.dtype is pyburn.float64
    total = sum(math.exp(v) for v in (1, 2, 3))
    assert_close(got.tolist(), [math.exp(v) / total for v in (1, 2, 3)], Tol(1e-6, 0.0),
                 "softmax")


BAD = [
    ("softmax without dim", pyburn.ArgumentError, lambda x: F.softmax(x), ("dim",)),
    ("softmax of ints", pyburn.DTypeError,
     lambda x: F.softmax(x.int(), dim=0), ("floating",)),
    ("softmax bad dim", pyburn.DimError, lambda x: F.log_softmax(x, dim=3), ("dim 3",)),
    ("glu odd", pyburn.ShapeError, lambda x: F.glu(x, 1), ("even", "(2, 3)")),
    ("gelu approximate", pyburn.ArgumentError,
     lambda x: F.gelu(x, approximate="fast"), ("approximate",)),
    ("prelu weight", pyburn.ShapeError,
     lambda x: F.prelu(x, pyburn.ones(2, device=x.device)), ("(2,)", "3")),
    ("hardtanh bounds", pyburn.ArgumentError, lambda x: F.hardtanh(x, 1.0, -1.0), ("min_val",)),
    ("softshrink lambd", pyburn.ArgumentError, lambda x: F.softshrink(x, -1.0), ("lambd",)),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_arguments(device, case):
    _, error, call, words = case
    with raises(error, *words):
        call(pyburn.zeros(2, 3, device=device))
