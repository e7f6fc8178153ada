"""Training does not leak: each step's graph is freed by backward, and optimizer updates under
no_grad keep nothing alive. Measured with tracemalloc (which sees Python objects and numpy's
buffers) on the cpu autodiff device."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

import pyburn

from .helpers import random_values

STEPS = 1000
WARM_UP = 100
# Python's caches and free lists settle during warm-up; anything that grows per step (a graph
# node, a snapshot, a gradient, even one small tensor) costs far more than this over 900 steps.
SLACK_BYTES = 64 * 1024
LR = 0.05


def _update_in_place(params: list[pyburn.Tensor]) -> list[pyburn.Tensor]:
    with pyburn.no_grad():
        for p in params:
            p[...] = p - LR * p.grad
            p.grad = None
    return params


def _update_by_rebinding(params: list[pyburn.Tensor]) -> list[pyburn.Tensor]:
    with pyburn.no_grad():
        return [(p - LR * p.grad).requires_grad_() for p in params]


@pytest.mark.parametrize("update", [_update_in_place, _update_by_rebinding],
                         ids=["setitem", "rebind"])
def test_training_loop_memory_stays_flat(update: Callable) -> None:
    try:
        dev = pyburn.device("cpu").autodiff()
    except pyburn.DeviceError as exc:
        pytest.skip(str(exc))

    def const(name: str, *shape: int) -> pyburn.Tensor:
        return pyburn.tensor(random_values(name, shape, -1.0, 1.0, "float32"), device=dev)

    data = const("memory/x", 32, 8)
    target = (data @ const("memory/teacher", 8, 1)).tanh()
    params = [const("memory/w1", 8, 16) * 0.5, const("memory/b1", 16) * 0.0,
              const("memory/w2", 16, 1) * 0.3, const("memory/b2", 1) * 0.0]
    params = [p.requires_grad_() for p in params]
    first_loss = last_loss = None
    tracemalloc.start()
    try:
        for step in range(STEPS):
            w1, b1, w2, b2 = params
            loss = (((data @ w1 + b1).tanh() @ w2 + b2 - target) ** 2).mean()
            loss.backward()
            last_loss = loss.item()  # kept as one float: a list of them would grow
            first_loss = last_loss if first_loss is None else first_loss
            params = update(params)
            del loss, w1, b1, w2, b2
            if step + 1 == WARM_UP:
                gc.collect()
                settled = tracemalloc.get_traced_memory()[0]
        gc.collect()
        final = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    growth = final - settled
    assert growth < SLACK_BYTES, f"memory grew by {growth} bytes from step {WARM_UP} to {STEPS}"
    assert last_loss < 0.2 * first_loss, f"loss went from {first_loss} to {last_loss}"
