"""`pyburn.kernel.op`: a function with its own backward, recorded on autodiff devices (the
`custom` rule), and its errors; `gradcheck` catches a wrong backward."""

from __future__ import annotations

import pytest

import pyburn
from pyburn.kernel import gradcheck, op


def _leaf(values: list[float]) -> pyburn.Tensor:
    return pyburn.tensor(values, device=pyburn.device("flex").autodiff(), requires_grad=True)


def test_the_backward_given_is_the_one_used():
    double = op(lambda x: x * 2, backward=lambda g, x: (g * 2,))
    x = _leaf([1.0, 2.0])
    (double(x) * pyburn.tensor([3.0, 5.0], device=x.device)).sum().backward()
    assert x.grad.tolist() == [6.0, 10.0]
    assert not double(x.detach()).requires_grad  # nothing to record


def test_a_wrong_backward_is_an_error_that_names_the_op():
    x = _leaf([1.0, 2.0])
    no_backward = op(lambda x: x * 2)
    with pytest.raises(pyburn.ArgumentError, match="has no backward"):
        no_backward(x)
    assert no_backward(x.detach()).tolist() == [2.0, 4.0]
    def twice(x):
        return x * 2

    with pytest.raises(pyburn.ArgumentError, match="twice's backward gave 2 gradients for 1"):
        op(twice, backward=lambda g, x: (g, g))(x).sum().backward()
    with pytest.raises(pyburn.ShapeError, match=r"shape \(1,\) for an input of shape \(2,\)"):
        op(twice, backward=lambda g, x: (g[:1],))(_leaf([1.0, 2.0])).sum().backward()


def test_gradcheck_catches_a_backward_that_is_off():
    square = op(lambda x: x * x, backward=lambda g, x: (2 * g * x,))
    assert gradcheck(square, _leaf([0.5, -1.5, 2.0]))
    wrong = op(lambda x: x * x, backward=lambda g, x: (3 * g * x,))
    with pytest.raises(pyburn.ArgumentError, match="input 0, element 0"):
        gradcheck(wrong, _leaf([0.5, -1.5, 2.0]))
