"""The "activation" capability against PyTorch (float64 CPU): values in every float dtype,
numba's loops and numpy's alike, first and second derivatives, and where it runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyburn
import pyburn.nn.functional as F
from pyburn.backends.cpu import activations as cpu_activations
from pyburn.backends.cpu import jit as cpu_jit
from pyburn.onnx.ops import activation as onnx_activation

NAMES = ("sigmoid", "silu", "hardsigmoid", "hardswish")
TORCH = {"sigmoid": torch.sigmoid, "silu": torch.nn.functional.silu,
         "hardsigmoid": torch.nn.functional.hardsigmoid,
         "hardswish": torch.nn.functional.hardswish}
#: large magnitudes (exp overflows, results below float32's normal range), the breakpoints,
#: signed zeros, infinities and NaN, then values of every size in between
SPECIAL = [-1000.0, -100.0, -90.0, -20.0, -3.0, -2.5, -1e-3, -0.0, 0.0, 1e-3, 2.5, 3.0, 20.0,
           100.0, 1000.0, np.inf, -np.inf, np.nan]


def _values(count: int = 64) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([SPECIAL, rng.standard_normal(count) * 4])


@pytest.fixture(params=["jit", "numpy"])
def jit(request, monkeypatch) -> str:
    """numba's loops, then numpy's ufuncs ($PYBURN_CPU_JIT=0)."""
    monkeypatch.setattr(cpu_jit, "enabled", lambda: request.param == "jit")
    return request.param


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_values_against_float64_torch(jit, name, dtype):
    x = _values().astype(dtype)
    got = getattr(F, name)(pyburn.from_numpy(x, device="cpu"))
    assert got.dtype is getattr(pyburn, dtype)
    want = TORCH[name](torch.from_numpy(x.astype(np.float64))).numpy()
    info = np.finfo(dtype)
    # one rounding to the dtype (float16: of the float32 result) and a few float32 ulps;
    # below the normal range, what the subnormals hold
    np.testing.assert_allclose(got.numpy().astype(np.float64), want,
                               rtol=4 * np.finfo(np.float32).eps + info.eps / 2,
                               atol=info.smallest_normal)
    # the signs of zeros, exactly (hardswish(-3) is -0.0)
    zeros = want.astype(dtype) == 0
    assert np.array_equal(np.signbit(got.numpy()[zeros]), np.signbit(want[zeros]))


def test_jit_and_numpy_agree_and_read_views(monkeypatch):
    """The loops and the ufuncs give the same float32 values, to the rounding of float32,
    on contiguous arrays and on strided views."""
    x = (_values(4000).astype(np.float32)[:3996]).reshape(18, 222)
    view = pyburn.from_numpy(x, device="cpu").T[::2]
    results = {}
    for switch in ("1", "0"):  # as $PYBURN_CPU_JIT would say at a process's start
        monkeypatch.setattr(cpu_jit, "enabled", lambda on=switch == "1": on)
        for name in NAMES:
            got = getattr(F, name)(view).numpy()
            np.testing.assert_array_equal(got, getattr(F, name)(view.contiguous()).numpy())
            results[switch, name] = got
    for name in NAMES:
        np.testing.assert_allclose(results["1", name], results["0", name],
                                   rtol=2 * np.finfo(np.float32).eps, atol=1e-38)


#: inputs for the derivatives: the breakpoints, each side of them, and the usual range
GRAD_POINTS = [-4.0, -3.0, -2.999, -1.0, -0.0, 0.5, 2.999, 3.0, 4.0, -30.0, 30.0]


@pytest.mark.parametrize("name", NAMES)
def test_first_and_second_derivatives_against_torch(name):
    rng = np.random.default_rng(1)
    x_np = np.array(GRAD_POINTS + list(rng.standard_normal(5) * 3))
    w_np, v_np = rng.standard_normal((2, x_np.size))
    dev = pyburn.device("cpu").autodiff()
    x = pyburn.tensor(x_np.tolist(), device=dev, dtype=pyburn.float64, requires_grad=True)
    w, v = (pyburn.tensor(a.tolist(), device=dev, dtype=pyburn.float64) for a in (w_np, v_np))
    tx = torch.tensor(x_np, requires_grad=True)
    tw, tv = torch.from_numpy(w_np), torch.from_numpy(v_np)

    (gx,) = pyburn.autodiff.grad((getattr(F, name)(x) * w).sum(), x, create_graph=True)
    (tgx,) = torch.autograd.grad((TORCH[name](tx) * tw).sum(), tx, create_graph=True)
    np.testing.assert_allclose(gx.numpy(), tgx.detach().numpy(), rtol=1e-12, atol=1e-7)
    if name == "hardsigmoid":  # piecewise linear: PyTorch has no second derivative for it
        assert not gx.requires_grad or not pyburn.autodiff.grad(
            (gx * v).sum(), x, allow_unused=True)[0].numpy().any()
        return
    (hx,) = pyburn.autodiff.grad((gx * v).sum(), x)
    (thx,) = torch.autograd.grad((tgx * tv).sum(), tx)
    np.testing.assert_allclose(hx.numpy(), thx.numpy(), rtol=1e-12, atol=1e-12)


@pytest.fixture
def calls(monkeypatch) -> list[str]:
    """The activations the cpu backend's capability computed."""
    seen: list[str] = []
    real = cpu_activations.activation

    def counted(x: np.ndarray, name: str) -> np.ndarray:
        seen.append(name)
        return real(x, name)

    monkeypatch.setattr(cpu_activations, "activation", counted)
    return seen


#: each entry point: the tensor method and function, nn.functional and the ONNX operators
#: (HardSigmoid only with PyTorch's alpha and beta, as a float32 attribute holds them)
ENTRY_POINTS = [
    ("Tensor.sigmoid", lambda x: x.sigmoid(), "sigmoid"),
    ("pyburn.sigmoid", pyburn.sigmoid, "sigmoid"),
    ("F.sigmoid", F.sigmoid, "sigmoid"), ("F.silu", F.silu, "silu"),
    ("F.hardsigmoid", F.hardsigmoid, "hardsigmoid"), ("F.hardswish", F.hardswish, "hardswish"),
    ("Sigmoid", onnx_activation.sigmoid, "sigmoid"),
    ("HardSwish", onnx_activation.hard_swish, "hardswish"),
    ("HardSigmoid", lambda x: onnx_activation.hard_sigmoid(
        x, alpha=float(np.float32(1 / 6)), beta=0.5), "hardsigmoid"),
    ("HardSigmoid(0.2)", lambda x: onnx_activation.hard_sigmoid(x, alpha=0.2, beta=0.5), None),
]


@pytest.mark.parametrize("where", ["cpu", "flex"])
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_the_capability_runs_where_offered(calls, where, entry):
    _, fn, name = entry
    x = pyburn.tensor([-4.0, -1.0, 0.0, 2.0, 5.0], device=where)
    got = fn(x)
    assert calls == ([name] if name and where == "cpu" else [])
    ref = torch.tensor([-4.0, -1.0, 0.0, 2.0, 5.0])
    want = (TORCH[name](ref) if name else (ref * 0.2 + 0.5).clamp(0, 1)).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)
