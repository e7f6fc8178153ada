"""A kernel compiles once per signature: the tensors' dtypes and dims, the scalars' types and
the constants' values; launching it again with the same ones compiles nothing."""

from __future__ import annotations

import pyburn

from .sources import load


def test_a_second_launch_of_a_signature_compiles_nothing(device):
    kernel = load("""
        def k(out: Tensor[f32], x: Tensor[f32], n: i32, scale: Const):
            i = K.global_id(0)
            if i < n:
                out[i] = x[i] * scale
        """)
    x = pyburn.arange(4.0, device=device)
    assert kernel[1, 4]((4,), x, 4, 2).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert kernel.compiles == 1
    kernel[1, 4]((4,), x + 1, 4, 2)  # new values, the same signature
    assert kernel.compiles == 1
    assert kernel[1, 4]((4,), x, 4, 3).tolist() == [0.0, 3.0, 6.0, 9.0]  # a new constant
    assert kernel.compiles == 2
    kernel[2, 2]((4,), x, 4, 3)  # another grid: the same kernel
    assert kernel.compiles == 2
