"""The "batch_norm_eval" capability (batch norm with given statistics) against PyTorch
(float64 CPU) and against the composite it replaces: values in every float dtype and rank,
numba's loop and numpy's passes alike, first and second derivatives, and where it runs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pyburn
import pyburn.nn.functional as F
from pyburn.backends.cpu import fused
from pyburn.backends.cpu import jit as cpu_jit
from pyburn.backends.cpu.backend import CpuBackend
from pyburn.onnx.ops import normalization as onnx_normalization

#: input shapes (N, C, ...) of every rank batch norm takes, a 4-d one large enough that the
#: loop's rows are long
SHAPES = [(4, 3), (2, 3, 5), (2, 3, 9, 7), (1, 3, 2, 3, 4)]


@pytest.fixture(params=["jit", "numpy"])
def jit(request, monkeypatch) -> str:
    """numba's loop, then numpy's passes ($PYBURN_CPU_JIT=0)."""
    monkeypatch.setattr(cpu_jit, "enabled", lambda: request.param == "jit")
    return request.param


def _inputs(shape: tuple[int, ...], seed: int = 0) -> tuple[np.ndarray, ...]:
    """x, the running mean and variance, weight and bias, float64."""
    rng = np.random.default_rng(seed)
    channels = shape[1]
    return (rng.normal(1.0, 3.0, shape), rng.normal(size=channels),
            rng.uniform(0.2, 3.0, channels), rng.uniform(0.5, 2.0, channels),
            rng.normal(size=channels))


def _eval(x, mean, var, weight, bias, affine: bool):
    return F.batch_norm(x, mean, var, weight if affine else None, bias if affine else None,
                        eps=1e-3)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("affine", [True, False])
def test_values_against_float64_torch(jit, dtype, shape, affine):
    arrays = [a.astype(dtype) for a in _inputs(shape)]
    got = _eval(*(pyburn.from_numpy(a, device="cpu") for a in arrays), affine)
    assert got.dtype is getattr(pyburn, dtype) and got.shape == shape
    x, mean, var, weight, bias = (torch.from_numpy(a.astype(np.float64)) for a in arrays)
    want = torch.nn.functional.batch_norm(x, mean, var, weight if affine else None,
                                          bias if affine else None, eps=1e-3).numpy()
    # the per-channel scale and shift rounded to the dtype, then a product and a sum each
    # rounded: a few units of the dtype's last place of the terms' magnitude
    eps = np.finfo(dtype).eps
    size = np.abs(arrays[0].astype(np.float64)).max() * 4 + 4
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=0,
                               atol=4 * eps * size)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_the_composites_numbers_bit_for_bit(jit, monkeypatch, dtype, affine):
    """The capability against the composite it replaces (the cpu backend without it), on
    a contiguous input, a strided view, an empty one and inf and NaN."""
    x_np, *stats = (a.astype(dtype) for a in _inputs((3, 4, 6, 5), seed=2))
    x_np[0, 1, 2, 3], x_np[2, 0, 1, 1] = np.inf, np.nan

    def run() -> list[np.ndarray]:
        x, mean, var, weight, bias = (pyburn.from_numpy(a, device="cpu") for a in (x_np, *stats))
        one = (weight if affine[0] else None, bias if affine[1] else None)
        return [F.batch_norm(v, mean, var, *one, eps=1e-3).numpy()
                for v in (x, x.permute(0, 1, 3, 2)[:, :, ::2], x[:0])]

    with_it = run()
    monkeypatch.setattr(CpuBackend, "caps", CpuBackend.caps - {"batch_norm_eval"})
    for got, want in zip(with_it, run(), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_jit_and_numpy_agree(monkeypatch):
    arrays = [a.astype(np.float32) for a in _inputs((2, 5, 8, 8), seed=3)]
    results = []
    for switch in ("1", "0"):  # as $PYBURN_CPU_JIT would say at a process's start
        monkeypatch.setattr(cpu_jit, "enabled", lambda on=switch == "1": on)
        results.append(_eval(*(pyburn.from_numpy(a, device="cpu") for a in arrays),
                             True).numpy())
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("affine", [True, False])
def test_first_and_second_derivatives_against_torch(affine):
    """Gradients in x, weight and bias, and the gradients of those gradients in x and the
    weight (the bias's is a constant), against torch's autograd."""
    x_np, mean_np, var_np, w_np, b_np = _inputs((2, 3, 4, 2), seed=4)
    rng = np.random.default_rng(5)
    g_np, v_np = rng.normal(size=(2, *x_np.shape))
    dev = pyburn.device("cpu").autodiff()

    def leaves(lib_tensor):
        x, w, b = (lib_tensor(a, True) for a in (x_np, w_np, b_np))
        mean, var, g, v = (lib_tensor(a, False) for a in (mean_np, var_np, g_np, v_np))
        return x, mean, var, w, b, g, v

    def ours(a, grad):
        return pyburn.tensor(a.tolist(), dtype=pyburn.float64, device=dev, requires_grad=grad)

    def theirs(a, grad):
        return torch.tensor(a, requires_grad=grad)

    x, mean, var, w, b, g, v = leaves(ours)
    tx, tmean, tvar, tw, tb, tg, tv = leaves(theirs)
    wanted = [x, w, b] if affine else [x]
    t_wanted = [tx, tw, tb] if affine else [tx]
    y = F.batch_norm(x, mean, var, *((w, b) if affine else ()), eps=1e-3)
    ty = torch.nn.functional.batch_norm(tx, tmean, tvar, *((tw, tb) if affine else ()),
                                        eps=1e-3)
    firsts = pyburn.autodiff.grad((y * y * g).sum(), wanted, create_graph=True)
    t_firsts = torch.autograd.grad((ty * ty * tg).sum(), t_wanted, create_graph=True)
    for got, want in zip(firsts, t_firsts, strict=True):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    second = (firsts[0] * v).sum()
    t_second = (t_firsts[0] * tv).sum()
    seconds = pyburn.autodiff.grad(second, wanted[:2])
    t_seconds = torch.autograd.grad(t_second, t_wanted[:2])
    for got, want in zip(seconds, t_seconds, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.fixture
def calls(monkeypatch) -> list[tuple[int, ...]]:
    """The shapes the cpu backend's capability normalised."""
    seen: list[tuple[int, ...]] = []
    real = fused.batch_norm_eval

    def counted(x: np.ndarray, *args) -> np.ndarray:
        seen.append(x.shape)
        return real(x, *args)

    monkeypatch.setattr(fused, "batch_norm_eval", counted)
    return seen


#: each entry point: F.batch_norm in evaluation, nn.BatchNorm2d in eval mode, the ONNX
#: operator in inference mode (x, mean, var, weight, bias -> y), and one that keeps the
#: composite (statistics that require grad)
ENTRY_POINTS = [
    ("F.batch_norm", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, eps=1e-3), True),
    ("BatchNormalization", lambda x, m, v, w, b: onnx_normalization.batch_normalization(
        x, w, b, m, v, epsilon=1e-3), True),
    ("mean requires grad", lambda x, m, v, w, b: F.batch_norm(
        x, m.detach().requires_grad_(), v, w, b, eps=1e-3), False),
]


@pytest.mark.parametrize("where", ["cpu", "flex"])
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_the_capability_runs_where_offered(calls, where, entry):
    _, fn, runs = entry
    arrays = [a.astype(np.float32) for a in _inputs((2, 3, 2, 2), seed=6)]
    dev = pyburn.device(where).autodiff()
    got = fn(*(pyburn.tensor(a.tolist(), device=dev) for a in arrays))
    assert calls == ([(2, 3, 2, 2)] if runs and where == "cpu" else [])
    want = torch.nn.functional.batch_norm(*(torch.from_numpy(a) for a in arrays), eps=1e-3)
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("where", ["cpu", "flex"])
def test_batch_norm_module_in_eval_mode(calls, where):
    torch.manual_seed(0)
    ref = torch.nn.BatchNorm2d(3, eps=1e-3)
    ref.running_mean.uniform_(-1, 1)
    ref.running_var.uniform_(0.5, 2)
    ref.weight.data.uniform_(0.5, 2)
    ref.bias.data.uniform_(-1, 1)
    ref.eval()
    module = pyburn.nn.BatchNorm2d(3, eps=1e-3, device=where)
    module.load_state_dict({k: pyburn.from_numpy(v.numpy(), device=where)
                            for k, v in ref.state_dict().items()})
    module.eval()
    x = torch.randn(1, 3, 4, 4)
    got = module(pyburn.from_numpy(x.numpy(), device=where)).numpy()
    assert calls == ([(1, 3, 4, 4)] if where == "cpu" else [])
    np.testing.assert_allclose(got, ref(x).detach().numpy(), rtol=1e-5, atol=1e-5)
