"""Semantics of the graph (pyburn/tape.py and its use in the tensor layer): leaves and
``.grad``, accumulation, freeing and retain_graph, grad mode, detach, int/bool pass-through,
in-place updates, moving between devices, and the errors for what cannot be differentiated."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from conformance.helpers import raises

import pyburn

from .helpers import flatten, widest_float

X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]


def leaf(dev: pyburn.Device, data: Any = X) -> pyburn.Tensor:
    """A leaf that requires grad, float64 where the device has it."""
    return pyburn.tensor(data, dtype=widest_float(dev), device=dev, requires_grad=True)


def values(t: pyburn.Tensor) -> list[float]:
    return flatten(t.tolist())


def scaled(factor: float, data: Any = X) -> list[float]:
    return [factor * v for v in flatten(data)]


# ---- leaves and .grad ---------------------------------------------------------------------

def test_backward_fills_grad_of_leaves_only(dev):
    x = leaf(dev)
    y = x * 3.0
    (y * x).sum().backward()
    assert values(x.grad) == scaled(6.0)
    assert (x.grad.shape, x.grad.dtype, x.grad.device) == (x.shape, x.dtype, dev)
    assert y.grad is None and not x.grad.requires_grad


def test_gradients_accumulate_over_backward_calls(dev):
    x = leaf(dev)
    (x * x).sum().backward()
    (x * 4.0).sum().backward()
    assert values(x.grad) == [2 * v + 4.0 for v in flatten(X)]
    x.grad = None
    (x * 5.0).sum().backward()
    assert values(x.grad) == [5.0] * 6


def test_unused_leaf_keeps_no_grad(dev):
    x, unused = leaf(dev), leaf(dev)
    (x * 2.0).sum().backward()
    assert unused.grad is None


def test_backward_of_a_leaf_itself(dev):
    x = leaf(dev)
    x.backward(pyburn.ones_like(x))
    assert values(x.grad) == [1.0] * 6


def test_implicit_gradient_survives_in_place_changes_of_grad(dev):
    # the implicit gradient of a one-element root is a shared constant: changing the .grad
    # it became must not change the next backward's gradient
    x = pyburn.tensor(3.0, dtype=widest_float(dev), device=dev, requires_grad=True)
    x.backward()
    x.backward()
    assert x.grad.item() == 2.0
    with pyburn.no_grad():
        x.grad.add_(5.0)
    x.grad = None
    x.backward()
    (x * 4.0).backward()
    assert x.grad.item() == 5.0


def test_backward_with_a_gradient_argument(dev):
    x = leaf(dev)
    w = pyburn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=widest_float(dev), device=dev)
    (x * 2.0).backward(gradient=w)
    assert values(x.grad) == [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]


def test_is_leaf(dev):
    x = leaf(dev)
    plain = pyburn.ones(2, 3, device=dev)
    assert x.is_leaf and plain.is_leaf
    assert not (x * 2.0).is_leaf
    assert (plain * 2.0).is_leaf  # recorded nothing: no input requires grad


def test_requires_grad_false(dev):
    x = leaf(dev)
    assert x.requires_grad_(False) is x and not x.requires_grad and x._node is None
    y = leaf(dev) * 2.0
    with raises(pyburn.ArgumentError, "detach"):
        y.requires_grad_(False)


@pytest.mark.parametrize("make", [
    lambda d: pyburn.tensor([1.0, 2.0], device=d, requires_grad=True),
    lambda d: pyburn.zeros(2, 3, device=d, requires_grad=True),
    lambda d: pyburn.ones((2,), device=d, requires_grad=True),
    lambda d: pyburn.empty(2, device=d, requires_grad=True),
    lambda d: pyburn.full((2, 2), 1.5, device=d, requires_grad=True),
    lambda d: pyburn.arange(0.0, 3.0, 0.5, device=d, requires_grad=True),
    lambda d: pyburn.linspace(0.0, 1.0, 5, device=d, requires_grad=True),
    lambda d: pyburn.eye(3, device=d, requires_grad=True),
    lambda d: pyburn.rand(2, 3, device=d, requires_grad=True),
    lambda d: pyburn.randn(4, device=d, requires_grad=True),
    lambda d: pyburn.zeros_like(pyburn.ones(2, device=d), requires_grad=True),
    lambda d: pyburn.ones_like(pyburn.ones(2, device=d), requires_grad=True),
    lambda d: pyburn.empty_like(pyburn.ones(2, device=d), requires_grad=True),
    lambda d: pyburn.full_like(pyburn.ones(2, device=d), 3.0, requires_grad=True),
    lambda d: pyburn.rand_like(pyburn.ones(2, device=d), requires_grad=True),
    lambda d: pyburn.randn_like(pyburn.ones(2, device=d), requires_grad=True),
], ids=["tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand", "randn",
        "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"])
def test_creation_functions_take_requires_grad(dev, make):
    t = make(dev)
    assert t.requires_grad and t.is_leaf and t.device is dev
    (t * 2.0).sum().backward()
    assert values(t.grad) == [2.0] * t.numel()


def test_requires_grad_needs_an_autodiff_device(device):
    with raises(pyburn.DeviceError, "autodiff"):
        pyburn.ones(3, device=device).requires_grad_()
    with raises(pyburn.DeviceError, "autodiff"):
        pyburn.ones(3, device=device, requires_grad=True)


def test_requires_grad_needs_a_float_tensor(dev):
    with raises(pyburn.DTypeError, "int32"):
        pyburn.tensor([1, 2], device=dev, requires_grad=True)


# ---- the graph is freed unless retained -----------------------------------------------------

def test_second_backward_needs_retain_graph(dev):
    x = leaf(dev)
    loss = (x.exp() * x).sum()
    loss.backward()
    assert loss._node.inputs is None  # the saved tensors are dropped after use
    with raises(pyburn.PyburnError, "retain_graph"):
        loss.backward()


def test_retain_graph_allows_a_second_backward(dev):
    x = leaf(dev)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert values(x.grad) == scaled(4.0)


def test_backward_with_create_graph_gives_differentiable_grads(dev):
    x = leaf(dev)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    assert values(x.grad) == pytest.approx([3 * v * v for v in flatten(X)])
    (second,) = pyburn.autodiff.grad(x.grad.sum(), x)
    assert values(second) == pytest.approx([6 * v for v in flatten(X)])


def test_deep_graph_needs_no_recursion(dev):
    """The walk is iterative: a chain far deeper than Python's recursion limit works."""
    x = pyburn.tensor([1.0], dtype=widest_float(dev), device=dev, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0 + 0.0
    y.sum().backward()
    assert values(x.grad) == [1.0]


# ---- grad mode --------------------------------------------------------------------------

def test_no_grad_records_nothing(dev):
    x = leaf(dev)
    with pyburn.no_grad():
        assert not pyburn.is_grad_enabled()
        y = (x * 2.0).exp().sum()
    assert pyburn.is_grad_enabled()
    assert not y.requires_grad and y._node is None and y.is_leaf
    with raises(pyburn.ArgumentError, "does not require grad"):
        y.backward()


def test_no_grad_as_decorator_and_enable_grad_inside(dev):
    x = leaf(dev)

    @pyburn.no_grad()
    def step(t: pyburn.Tensor) -> tuple[pyburn.Tensor, pyburn.Tensor]:
        quiet = t * 2.0
        with pyburn.enable_grad():
            loud = t * 3.0
        return quiet, loud

    quiet, loud = step(x)
    assert step.__name__ == "step"
    assert not quiet.requires_grad and loud.requires_grad
    assert pyburn.is_grad_enabled()


def test_grad_mode_is_restored_after_an_error(dev):
    with pytest.raises(ZeroDivisionError), pyburn.no_grad():
        raise ZeroDivisionError
    assert pyburn.is_grad_enabled()


def test_grad_mode_is_per_thread(dev):
    seen = []
    with pyburn.no_grad():
        worker = threading.Thread(target=lambda: seen.append(pyburn.is_grad_enabled()))
        worker.start()
        worker.join()
    assert seen == [True]


# ---- detach and non-differentiable results --------------------------------------------------

def test_detach_cuts_the_graph(dev):
    x = leaf(dev)
    y = x * 2.0
    d = y.detach()
    assert not d.requires_grad and d._node is None and d.is_leaf
    assert values(d) == values(y)
    (d * x).sum().backward()
    assert values(x.grad) == values(d)  # nothing flows through d


@pytest.mark.parametrize("fn", [
    lambda x: x.argmax(),
    lambda x: x.argmin(dim=1),
    lambda x: x.max(dim=1).indices,
    lambda x: x.sort(dim=0).indices,
    lambda x: x.topk(2).indices,
    lambda x: x > 0,
    lambda x: x.isnan(),
    lambda x: x.int(),
    lambda x: (x > 0).sum(),
    lambda x: x.nonzero(),
    lambda x: x.count_nonzero(),
], ids=["argmax", "argmin", "max_indices", "sort_indices", "topk_indices", "compare", "isnan",
        "cast_int", "bool_sum", "nonzero", "count_nonzero"])
def test_int_and_bool_results_pass_through(dev, fn):
    out = fn(leaf(dev))
    assert not out.dtype.is_floating_point
    assert not out.requires_grad and out._node is None


def test_backward_of_an_int_or_bool_tensor_raises(dev):
    x = leaf(dev)
    with raises(pyburn.DTypeError, "bool", "float"):
        (x > 0).any().backward()
    with raises(pyburn.DTypeError, "int32", "float"):
        x.argmax().backward()


def test_backward_of_a_tensor_without_grad_raises(dev):
    with raises(pyburn.ArgumentError, "does not require grad"):
        pyburn.ones(3, device=dev).sum().backward()


def test_backward_on_a_plain_device_raises(device):
    with raises(pyburn.ArgumentError, "autodiff"):
        pyburn.ones(3, device=device).sum().backward()


def test_backward_of_a_non_scalar_needs_a_gradient(dev):
    with raises(pyburn.ShapeError, "(2, 3)", "gradient"):
        (leaf(dev) * 2.0).backward()


# ---- in-place updates ---------------------------------------------------------------------

def test_setitem_on_a_leaf_that_requires_grad_raises(dev):
    x = leaf(dev)
    with raises(pyburn.ArgumentError, "no_grad"):
        x[0] = 1.0
    with raises(pyburn.ArgumentError, "no_grad"):
        x.add_(1.0)
    assert values(x) == flatten(X)


def test_setitem_on_a_leaf_under_no_grad(dev):
    x = leaf(dev)
    with pyburn.no_grad():
        x[0] = 1.0
        x[1, ::2] = x[1, ::2] * 10.0
    assert values(x) == [1.0, 1.0, 1.0, 15.0, 0.25, -7.5]
    assert x.is_leaf and x.requires_grad
    (x * x).sum().backward()
    assert values(x.grad) == [2.0, 2.0, 2.0, 30.0, 0.5, -15.0]


def test_update_keeps_recorded_values(dev):
    """A graph keeps the values its inputs had when it was recorded."""
    x = leaf(dev)
    loss = (x * x).sum()
    with pyburn.no_grad():
        x[...] = x * 100.0
    loss.backward()
    assert values(x.grad) == scaled(2.0)


def test_setitem_on_non_leaf_is_recorded(dev):
    x = leaf(dev)
    y = x * 2.0
    z = y * y  # recorded with the old y
    y[0] = x[1] * 3.0
    (z.sum() + y.sum()).backward()
    # z: 8x everywhere; y after the update: row 0 came from 3 * x[1], row 1 from 2 * x[1]
    expected = [8 * v for v in flatten(X)]
    expected = [e if i < 3 else e + 5.0 for i, e in enumerate(expected)]
    assert values(x.grad) == pytest.approx(expected)


@pytest.mark.parametrize("update", [
    lambda y: y.zero_(),
    lambda y: y.fill_(2.5),
    lambda y: y.copy_(pyburn.ones(3, dtype=widest_float(y.device), device=y.device)),
], ids=["zero_", "fill_", "copy_constant"])
def test_overwriting_a_non_leaf_with_a_constant_cuts_its_graph(dev, update):
    """After ``y.zero_()`` y depends on nothing: no gradient reaches x through it."""
    x = leaf(dev)
    y = x * 2.0
    update(y)
    (y + x).sum().backward()
    assert values(x.grad) == [1.0] * 6


# ---- devices ----------------------------------------------------------------------------

def test_moving_between_plain_and_autodiff_forms(dev):
    plain = dev.plain()
    x = leaf(dev)
    off = x.to(plain)
    assert off.device is plain and not off.requires_grad and off._node is None
    assert values(off) == flatten(X)
    with raises(pyburn.DeviceError, "autodiff"):
        off.requires_grad_()
    back = off.to(dev)
    assert back.device is dev and not back.requires_grad and back.is_leaf
    back.requires_grad_()
    (back * 3.0).sum().backward()
    assert values(back.grad) == [3.0] * 6 and x.grad is None
    assert pyburn.tensor([1.0], device=plain).to(dev.name).device is dev


def test_moving_between_autodiff_devices_is_recorded(dev):
    x = leaf(dev)
    others = [d.autodiff() for d in pyburn.available_devices()
              if d.autodiff() is not dev and x.dtype in d.backend.dtypes]
    if not others:
        pytest.skip(f"needs a second available device with {x.dtype.name}")
    y = x.to(others[0])
    assert y.device is others[0] and y.requires_grad and not y.is_leaf
    (y * y).sum().backward()
    assert x.grad.device is dev
    assert values(x.grad) == scaled(2.0)


# ---- post-accumulate-grad hooks -------------------------------------------------------------

def test_post_accumulate_grad_hooks_run_once_per_leaf_with_the_whole_gradient():
    dev = pyburn.device("flex").autodiff()
    w1, w2 = leaf(dev, [1.0, 2.0]), leaf(dev, [3.0, 4.0])
    seen: list[tuple[str, list[float]]] = []
    handles = [w.register_post_accumulate_grad_hook(
        lambda t, name=name: seen.append((name, values(t.grad)))) for name, w in
        (("w1", w1), ("w2", w2))]
    h = w1 * w1  # w1 reaches the loss by two paths: one call, after both are summed
    (w2 * h + w1).sum().backward()
    # the layer used last is finished first (what gradient bucketing relies on)
    assert seen == [("w2", [1.0, 4.0]), ("w1", [7.0, 17.0])]
    seen.clear()
    (w1 * 2.0).sum().backward()  # accumulated into .grad before the hook sees it
    assert seen == [("w1", [9.0, 19.0])]
    handles[0].remove()
    handles[0].remove()
    seen.clear()
    (w1 * w2).sum().backward()
    assert [name for name, _ in seen] == ["w2"]
    pyburn.autodiff.grad((w1 * w2).sum(), [w2])  # leaves .grad alone: no hook
    assert [name for name, _ in seen] == ["w2"]


def test_post_accumulate_grad_hook_needs_a_leaf_that_requires_grad():
    dev = pyburn.device("flex").autodiff()
    x = leaf(dev)
    with raises(pyburn.PyburnError, "does not require grad"):
        pyburn.tensor([1.0], device=dev).register_post_accumulate_grad_hook(print)
    with raises(pyburn.PyburnError, "only leaf tensors"):
        (x * 2.0).register_post_accumulate_grad_hook(print)
    with raises(pyburn.PyburnError, "callable"):
        x.register_post_accumulate_grad_hook(None)  # type: ignore[arg-type]
