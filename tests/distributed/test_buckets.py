"""How gradient buckets are planned (no Ray needed; the bucketed all-reduce itself is checked
end to end by test_strategy.py)."""

from __future__ import annotations

import pyburn
from pyburn.distributed.buckets import plan_buckets


def test_buckets_take_parameters_in_reverse_order_by_size_dtype_and_once():
    dev = pyburn.device("cpu").autodiff()

    def param(n: int, dtype: pyburn.DType = pyburn.float32) -> pyburn.Tensor:
        return pyburn.zeros(n, dtype=dtype, device=dev, requires_grad=True)

    a, b, c, d = param(10), param(10), param(30), param(5, pyburn.float64)
    frozen = pyburn.zeros(4, device=dev)
    names = {id(t): name for name, t in zip("abcd", (a, b, c, d))}
    # reversed: b (listed twice: once), d (float64: its own), c (120 bytes: past 100 alone),
    # then a, which does not fit with c
    planned = plan_buckets([a, b, frozen, c, d, b], bucket_bytes=100)
    assert [[names[id(p)] for p in bucket] for bucket in planned] == [["b"], ["d"], ["c"],
                                                                      ["a"]]
    assert [[names[id(p)] for p in bucket] for bucket in plan_buckets([a, b, c], 1e6)] == [
        ["c", "b", "a"]]
