"""The functional API (pyburn/autodiff/api.py): `grad` with its options, higher-order
derivatives (Hessian-vector products against PyTorch and finite differences), checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conformance.helpers import raises

import pyburn

from .helpers import (
    PyburnLib,
    Tol,
    TorchLib,
    assert_close,
    flatten,
    nest,
    random_values,
    widest_float,
)

grad = pyburn.autodiff.grad
checkpoint = pyburn.autodiff.checkpoint


def leaf(dev: pyburn.Device, data: Any) -> pyburn.Tensor:
    return pyburn.tensor(data, dtype=widest_float(dev), device=dev, requires_grad=True)


def values(t: pyburn.Tensor) -> list[float]:
    return flatten(t.tolist())


# ---- grad ----------------------------------------------------------------------------------

def test_grad_returns_gradients_and_leaves_dot_grad_alone(dev):
    x, w = leaf(dev, [1.0, 2.0]), leaf(dev, [3.0, -1.0])
    gx, gw = grad((x * w).sum(), [x, w])
    assert values(gx) == [3.0, -1.0] and values(gw) == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    (only,) = grad((x * x).sum(), x)
    assert values(only) == [2.0, 4.0]


def test_grad_of_several_outputs_with_grad_outputs(dev):
    x = leaf(dev, [1.0, 2.0])
    weight = pyburn.tensor([10.0, 100.0], dtype=widest_float(dev), device=dev)
    (g,) = grad([x * 2.0, (x * x).sum()], [x], grad_outputs=[weight, None])
    assert values(g) == [22.0, 204.0]
    with raises(pyburn.ArgumentError, "grad_outputs"):
        grad([x * 2.0, x.sum()], [x], grad_outputs=[weight])


def test_grad_with_respect_to_an_intermediate(dev):
    x = leaf(dev, [0.5, -1.0])
    y = x.exp()
    gy, gx = grad((y * y).sum(), [y, x])
    assert values(gy) == pytest.approx([2 * v for v in values(y)])
    assert values(gx) == pytest.approx([2 * v * v for v in values(y)])


def test_grad_allow_unused(dev):
    x, unused = leaf(dev, [1.0, 2.0]), leaf(dev, [3.0])
    with raises(pyburn.ArgumentError, "allow_unused"):
        grad((x * x).sum(), [x, unused])
    gx, nothing = grad((x * x).sum(), [x, unused], allow_unused=True)
    assert values(gx) == [2.0, 4.0] and nothing is None


def test_grad_input_must_require_grad(dev):
    x = leaf(dev, [1.0])
    constant = pyburn.tensor([2.0], dtype=widest_float(dev), device=dev)
    with raises(pyburn.ArgumentError, "does not require grad"):
        grad((x * constant).sum(), [constant])


def test_grad_frees_the_graph_unless_retained(dev):
    x = leaf(dev, [1.0, 2.0])
    loss = (x.sin() * x).sum()
    grad(loss, x)
    with raises(pyburn.PyburnError, "retain_graph"):
        grad(loss, x)
    kept = (x.sin() * x).sum()
    first = grad(kept, x, retain_graph=True)
    assert values(grad(kept, x)[0]) == values(first[0])


def test_third_derivative(dev):
    x = leaf(dev, [1.5, -2.0])
    (d1,) = grad((x ** 4).sum(), x, create_graph=True)
    (d2,) = grad(d1.sum(), x, create_graph=True)
    (d3,) = grad(d2.sum(), x)
    assert values(d1) == pytest.approx([4 * v ** 3 for v in (1.5, -2.0)])
    assert values(d2) == pytest.approx([12 * v ** 2 for v in (1.5, -2.0)])
    assert values(d3) == pytest.approx([24 * v for v in (1.5, -2.0)])


# ---- Hessian-vector products ---------------------------------------------------------------

def _mlp(L: Any, w1: Any, b1: Any, w2: Any) -> Any:
    data = L.const(random_values("mlp/data", (5, 3), -1.0, 1.0, "float64"))
    return ((data @ w1 + b1).tanh() @ w2).square().mean()


# name -> (f(L, *params), parameter shapes)
HVP_FUNCTIONS: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "mlp_tanh": (_mlp, ((3, 4), (4,), (4, 2))),
    "logsumexp": (lambda L, x: x.logsumexp(dim=1).sum(), ((3, 4),)),
    "x_cubed_sin": (lambda L, x: (x ** 3 * x.sin()).sum(), ((2, 3),)),
    "matmul_chain": (lambda L, a, b: ((a @ b @ a).tanh() @ b).sum(), ((3, 3), (3, 3))),
}
HVP_TOL = Tol(rel=1e-8, abs=1e-10)
HVP_FD_TOL = Tol(rel=1e-6, abs=1e-7)


def _point(name: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[list, list]:
    params = [random_values(f"{name}/param{k}", s, -1.0, 1.0, "float64")
              for k, s in enumerate(shapes)]
    direction = [random_values(f"{name}/v{k}", s, -1.0, 1.0, "float64")
                 for k, s in enumerate(shapes)]
    return params, direction


def pyburn_gradient(dev: pyburn.Device, f: Callable[..., Any], params: list,
                    create_graph: bool = False) -> tuple[list, tuple]:
    """(leaves, gradients of f at params)."""
    lib = PyburnLib(dev, pyburn.float64)
    leaves = [lib.leaf(p, True) for p in params]
    return leaves, grad(f(lib, *leaves), leaves, create_graph=create_graph)


def pyburn_hvp(dev: pyburn.Device, f: Callable[..., Any], params: list,
               direction: list) -> list[list[float]]:
    """H v by differentiating g . v, where g was computed with create_graph."""
    leaves, grads = pyburn_gradient(dev, f, params, create_graph=True)
    vs = [pyburn.tensor(v, dtype=widest_float(dev), device=dev) for v in direction]
    dot = sum((g * v).sum() for g, v in zip(grads, vs))
    return [values(h) for h in grad(dot, leaves)]


@pytest.mark.parametrize("name", HVP_FUNCTIONS)
def test_hvp_matches_torch(dev, float64, name):
    torch = pytest.importorskip("torch")
    f, shapes = HVP_FUNCTIONS[name]
    params, direction = _point(name, shapes)
    lib = TorchLib()
    _, want = torch.autograd.functional.hvp(
        lambda *ps: f(lib, *ps), tuple(torch.tensor(p, dtype=torch.float64) for p in params),
        tuple(torch.tensor(v, dtype=torch.float64) for v in direction))
    for k, (got, ref) in enumerate(zip(pyburn_hvp(dev, f, params, direction), want)):
        assert_close(got, ref.reshape(-1).tolist(), len(got), HVP_TOL, f"{name}: H v, input {k}")


@pytest.mark.parametrize("name", HVP_FUNCTIONS)
def test_hvp_matches_finite_differences_of_the_gradient(dev, float64, name):
    f, shapes = HVP_FUNCTIONS[name]
    params, direction = _point(name, shapes)
    eps = 1e-5

    def gradient_at(sign: int) -> list[list[float]]:
        moved = [[p + sign * eps * v for p, v in zip(flatten(ps), flatten(vs))]
                 for ps, vs in zip(params, direction)]
        shaped = [nest(m, s) for m, s in zip(moved, shapes)]
        return [values(g) for g in pyburn_gradient(dev, f, shaped)[1]]

    ahead, behind = gradient_at(1), gradient_at(-1)
    got = pyburn_hvp(dev, f, params, direction)
    for k, (h, a, b) in enumerate(zip(got, ahead, behind)):
        numeric = [(p - m) / (2 * eps) for p, m in zip(a, b)]
        assert_close(h, numeric, len(h), HVP_FD_TOL, f"{name}: H v vs differences, input {k}")


# ---- checkpoint --------------------------------------------------------------------------

def _block(calls: list, scale: float):
    def block(x: pyburn.Tensor, w: pyburn.Tensor) -> pyburn.Tensor:
        calls.append(pyburn.is_grad_enabled())
        return ((x @ w).tanh() * scale).exp()

    return block


def _inputs(dev: pyburn.Device) -> tuple[pyburn.Tensor, pyburn.Tensor]:
    x = leaf(dev, random_values("checkpoint/x", (3, 4), -1.0, 1.0, "float64"))
    w = leaf(dev, random_values("checkpoint/w", (4, 2), -1.0, 1.0, "float64"))
    return x, w


def test_checkpoint_gives_the_direct_gradients(dev):
    calls: list[bool] = []
    block = _block(calls, 0.5)
    x, w = _inputs(dev)
    (block(x, w).sin().sum()).backward()
    direct = values(x.grad), values(w.grad)
    x.grad = w.grad = None
    calls.clear()
    out = checkpoint(block, x, w)
    assert calls == [False]  # the forward pass keeps no graph inside the block
    assert out.requires_grad and not out.is_leaf
    out.sin().sum().backward()
    assert calls == [False, True]  # run again, with gradients on, during backward
    assert values(x.grad) == pytest.approx(direct[0], rel=1e-12)
    assert values(w.grad) == pytest.approx(direct[1], rel=1e-12)


def test_checkpoint_with_a_constant_and_non_tensor_arguments(dev):
    x, w = _inputs(dev)
    const = w.detach()

    def block(a: pyburn.Tensor, b: pyburn.Tensor, scale: float) -> pyburn.Tensor:
        return (a @ b * scale).tanh()

    checkpoint(block, x, const, 2.0).sum().backward()
    via_checkpoint = values(x.grad)
    x.grad = None
    block(x, const, 2.0).sum().backward()
    assert via_checkpoint == pytest.approx(values(x.grad), rel=1e-12)


def test_checkpoint_without_grad_just_calls(dev):
    calls: list[bool] = []
    x, w = _inputs(dev)
    out = checkpoint(_block(calls, 1.0), x.detach(), w.detach())
    assert calls == [True] and not out.requires_grad and out._node is None


def test_checkpoint_second_order(dev):
    """Gradients through a checkpoint can be differentiated again, like any other."""
    block = _block([], 0.3)
    x, w = _inputs(dev)

    def hessian_term(run: Callable[..., pyburn.Tensor]) -> list[float]:
        (gx,) = grad(run(block, x, w).sum() + (x ** 3).sum(), x, create_graph=True)
        return values(grad((gx * gx).sum(), x)[0])

    assert hessian_term(checkpoint) == pytest.approx(hessian_term(lambda f, *a: f(*a)),
                                                     rel=1e-10)


def test_checkpoint_needs_a_tensor_result(dev):
    x, w = _inputs(dev)
    with raises(pyburn.ArgumentError, "single tensor"):
        checkpoint(lambda a, b: (a, b), x, w)
