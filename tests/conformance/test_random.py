"""Random numbers: reproducible with manual_seed, identical across devices, and distributed
right (sample moments within five standard errors on 100k draws; a false alarm has odds of
about 1 in 1.7 million per check, and the seeds are fixed, so a run is deterministic)."""

from __future__ import annotations

import math

import pytest

import pyburn

N = 100_000
SIGMAS = 5.0


def _draws(device) -> dict[str, list]:
    """One of each random call after seeding, read back as Python numbers."""
    pyburn.manual_seed(20261130)
    return {
        "rand": pyburn.rand(3, 337, device=device).tolist(),
        "randint": pyburn.randint(-50, 1000, (1001,), device=device).tolist(),
        "randn": pyburn.randn(2, 501, device=device).tolist(),
        "bernoulli": pyburn.bernoulli(pyburn.full((777,), 0.3, device=device)).tolist(),
        "rand_after": pyburn.rand(5, device=device).tolist(),
    }


def _flat(values) -> list:
    return [v for row in values for v in row] if values and isinstance(values[0], list) else values


def test_manual_seed_reproduces(device):
    first, second = _draws(device), _draws(device)
    assert first == second


def test_consecutive_calls_differ(device):
    pyburn.manual_seed(7)
    a, b = pyburn.rand(64, device=device).tolist(), pyburn.rand(64, device=device).tolist()
    assert a != b
    pyburn.manual_seed(8)
    assert pyburn.rand(64, device=device).tolist() not in (a, b)


def test_same_numbers_on_every_device(device):
    """rand, randint and bernoulli are bit-identical everywhere; randn may differ in the last
    float32 bit (transcendental functions are not correctly rounded on every backend)."""
    reference_device = pyburn.available_devices()[0]
    mine, theirs = _draws(device), _draws(reference_device)
    for name in ("rand", "randint", "bernoulli", "rand_after"):
        assert mine[name] == theirs[name], f"{name} differs between {device} and {reference_device}"
    for a, b in zip(_flat(mine["randn"]), _flat(theirs["randn"]), strict=True):
        assert math.isclose(a, b, rel_tol=2.5e-7, abs_tol=1e-6), (a, b)


def test_generator_objects_are_independent(device):
    g1, g2 = pyburn.Generator(99), pyburn.Generator(99)
    a = pyburn.rand(16, device=device, generator=g1).tolist()
    pyburn.manual_seed(1)
    pyburn.rand(16, device=device)
    assert pyburn.rand(16, device=device, generator=g2).tolist() == a


def _moments(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = math.fsum(values) / n
    return mean, math.fsum((v - mean) ** 2 for v in values) / (n - 1)


def _within(value: float, expected: float, standard_error: float, what: str) -> None:
    assert abs(value - expected) <= SIGMAS * standard_error, (
        f"{what} = {value}, expected {expected} ± {SIGMAS} × {standard_error}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_rand_is_uniform(device, dtype):
    if dtype not in ("float32",) and dtype not in device.caps:
        pytest.skip(f"device {device} lacks {dtype}")
    pyburn.manual_seed(11)
    t = pyburn.rand(N, device=device, dtype=getattr(pyburn, dtype))
    assert (t.shape, t.dtype.name, t.device) == ((N,), dtype, device)
    values = t.tolist()
    assert 0.0 <= min(values) and max(values) < 1.0
    mean, var = _moments(values)
    _within(mean, 0.5, math.sqrt(1 / 12 / N), "mean")
    _within(var, 1 / 12, math.sqrt((1 / 80 - 1 / 144) / N), "variance")
    deciles = [0] * 10
    for v in values:
        deciles[int(v * 10)] += 1
    for count in deciles:
        _within(count / N, 0.1, math.sqrt(0.09 / N), "decile share")


def test_rand_shapes(device):
    assert pyburn.rand(2, 3, device=device).shape == (2, 3)
    assert pyburn.rand((4, 1), device=device).shape == (4, 1)
    assert pyburn.randn(0, 5, device=device).shape == (0, 5)


def test_randn_is_standard_normal(device):
    pyburn.manual_seed(12)
    t = pyburn.randn(N, device=device)
    assert (t.shape, t.dtype, t.device) == ((N,), pyburn.float32, device)
    values = t.tolist()
    assert all(math.isfinite(v) for v in values)
    mean, var = _moments(values)
    _within(mean, 0.0, math.sqrt(1 / N), "mean")
    _within(var, 1.0, math.sqrt(2 / N), "variance")
    inside = sum(1 for v in values if abs(v) < 1) / N
    p = math.erf(1 / math.sqrt(2))
    _within(inside, p, math.sqrt(p * (1 - p) / N), "share within one sigma")
    skew = math.fsum((v - mean) ** 3 for v in values) / N / var**1.5
    _within(skew, 0.0, math.sqrt(6 / N), "skewness")


@pytest.mark.parametrize("low,high", [(-3, 5), (0, 2), (10, 17)])
def test_randint_is_uniform(device, low, high):
    pyburn.manual_seed(13)
    t = pyburn.randint(low, high, (N,), device=device)
    assert (t.shape, t.dtype, t.device) == ((N,), pyburn.int32, device)
    values = t.tolist()
    assert all(type(v) is int for v in values[:10])
    assert min(values) == low and max(values) == high - 1
    k = high - low
    for value in range(low, high):
        share = values.count(value) / N
        _within(share, 1 / k, math.sqrt((1 / k) * (1 - 1 / k) / N), f"share of {value}")


def test_randint_with_only_high(device):
    t = pyburn.randint(4, size=(1000,), device=device)
    assert set(t.tolist()) == {0, 1, 2, 3}


def test_bernoulli_follows_p(device):
    pyburn.manual_seed(14)
    probs = [0.0, 0.1, 0.5, 0.9, 1.0]
    rows = N // len(probs)
    p = pyburn.tensor(probs, device=device).expand(rows, len(probs))
    t = pyburn.bernoulli(p)
    assert (t.shape, t.dtype, t.device) == ((rows, len(probs)), pyburn.float32, device)
    columns = list(zip(*t.tolist(), strict=True))
    for prob, column in zip(probs, columns, strict=True):
        assert set(column) <= {0.0, 1.0}
        _within(sum(column) / rows, prob, math.sqrt(prob * (1 - prob) / rows) or 1e-12,
                f"mean for p={prob}")
