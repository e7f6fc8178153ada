"""What a kernel computes, on every device: integer arithmetic wraps at 32 bits and floors
as Python does, a float cast truncates and wraps as pyburn's tensor casts do, the op table's
edge cases (division by zero) are the tensor ops' own, variables start at 0, and a barrier
must be reached by a whole workgroup."""

from __future__ import annotations

import math

import pytest

import pyburn
from pyburn.kernel import KernelError

from .sources import load

INTS = [0, 1, -1, 7, -7, 3, 2**31 - 1, -(2**31), 123456789, -98765]


def _wrapped(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


BINARY = load("""
    def k(add: Tensor[i32], mul: Tensor[i32], fdiv: Tensor[i32], mod: Tensor[i32],
          shl: Tensor[i32], a: Tensor[i32], b: Tensor[i32], n: i32):
        i = K.global_id(0)
        if i < n:
            add[i] = a[i] + b[i]
            mul[i] = a[i] * b[i]
            fdiv[i] = a[i] // b[i]
            mod[i] = a[i] % b[i]
            shl[i] = a[i] << (b[i] & 31)
    """)


def test_integers_wrap_and_floor_as_python_does(device):
    pairs = [(x, y) for x in INTS for y in INTS]
    a = pyburn.tensor([x for x, _ in pairs], dtype=pyburn.int32, device=device)
    b = pyburn.tensor([y for _, y in pairs], dtype=pyburn.int32, device=device)
    n = len(pairs)
    add, mul, fdiv, mod, shl = BINARY[(n + 31) // 32, 32]((n,), (n,), (n,), (n,), (n,), a, b,
                                                          n)
    assert add.tolist() == [_wrapped(x + y) for x, y in pairs]
    assert mul.tolist() == [_wrapped(x * y) for x, y in pairs]
    assert shl.tolist() == [_wrapped(x << (y & 31)) for x, y in pairs]
    defined = [k for k, (x, y) in enumerate(pairs) if y != 0 and not (x == -(2**31) and y == -1)]
    assert [fdiv.tolist()[k] for k in defined] == [pairs[k][0] // pairs[k][1] for k in defined]
    assert [mod.tolist()[k] for k in defined] == [pairs[k][0] % pairs[k][1] for k in defined]
    # division by zero (and INT_MIN // -1) as the tensor ops on this device define them
    assert fdiv.tolist() == pyburn.floor_divide(a, b).tolist()
    assert mod.tolist() == pyburn.remainder(a, b).tolist()


@pytest.mark.parametrize("kind", ["i32", "u32"])
def test_division_by_a_constant_power_of_two_floors_as_python_does(device, kind):
    """WGSL makes these a shift and a mask; 2**31 is one for u32, not for i32 (it wraps to
    INT_MIN). u32 values are cast from and to i32 tensors (pyburn's have no u32)."""
    kernel = load(f"""
        def k(out: Tensor[i32, 2], a: Tensor[i32], n: i32):
            i = K.global_id(0)
            if i < n:
                v = {kind}(a[i])
                out[i, 0] = i32(v // 1)
                out[i, 1] = i32(v % 1)
                out[i, 2] = i32(v // 8)
                out[i, 3] = i32(v % 8)
                out[i, 4] = i32(v // 1073741824)
                out[i, 5] = i32(v % 1073741824)
                out[i, 6] = i32(v // {kind}(2147483648))
                out[i, 7] = i32(v % {kind}(2147483648))
        """)
    got = kernel[1, 16]((len(INTS), 8), pyburn.tensor(INTS, dtype=pyburn.int32, device=device),
                        len(INTS)).tolist()
    values = [v % 2**32 for v in INTS] if kind == "u32" else INTS
    top = 2**31 if kind == "u32" else -(2**31)
    want = [[_wrapped(q) for d in (1, 8, 2**30, top) for q in (v // d, v % d)] for v in values]
    assert got == want


def test_float_casts_truncate_and_wrap_as_tensor_casts_do(device):
    kernel = load("""
        def k(out: Tensor[i32], x: Tensor[f32], n: i32):
            i = K.global_id(0)
            if i < n:
                out[i] = K.i32(x[i])
        """)
    values = [0.0, -0.5, 2.9, -2.9, 1e9, 3e9, -3e9, 1e30, math.inf, -math.inf, math.nan]
    x = pyburn.tensor(values, device=device)
    got = kernel[1, 16]((len(values),), x, len(values)).tolist()
    assert got[:4] == [0, 0, 2, -2] and got[8:] == [0, 0, 0]
    assert got == x.int().tolist()


def test_variables_start_at_zero_and_bools_compare(device):
    kernel = load("""
        def k(out: Tensor[f32], x: Tensor[f32], n: i32):
            i = K.global_id(0)
            if i < n:
                t = 0.0
            if x[i] > 0.0:
                t = 1.0
            same = (x[i] > 0.0) == (i < n)
            out[i] = t + K.select(same, 10.0, 0.0)
        """)
    x = pyburn.tensor([1.0, -1.0, 2.0, -2.0], device=device)
    assert kernel[1, 4]((4,), x, 2).tolist() == [11.0, 0.0, 1.0, 10.0]


def test_constants_are_told_apart_by_type_and_sign(device):
    kernel = load("""
        def k(out: Tensor[f32], scale: Const):
            out[0] = 1.0 * scale
        """)
    assert str(kernel[1, 1]((1,), -0.0).tolist()) == "[-0.0]"
    assert str(kernel[1, 1]((1,), 0.0).tolist()) == "[0.0]"
    unrolled = load("""
        def k(out: Tensor[f32], count: Const):
            acc = 0.0
            for s in static_range(count):
                acc += 1.0
            out[0] = acc
        """)
    assert unrolled[1, 1]((1,), 0).tolist() == [0.0]
    assert unrolled[1, 1]((1,), 3).tolist() == [3.0]


@pytest.mark.parametrize("checker", ["flex", "cpu"])  # a GPU cannot tell: it is undefined there
def test_a_barrier_is_reached_by_the_whole_workgroup(checker):
    kernel = load("""
        def k(out: Tensor[f32]):
            s = K.shared(K.f32, 4)
            i = K.local_id(0)
            s[i] = 1.0
            if i < 2:
                K.barrier()
            out[i] = s[3 - i]
        """)
    with pytest.raises(KernelError, match="that others did not"):
        kernel[1, 4](pyburn.zeros(4, device=checker))


def test_an_invocations_own_array_is_its_own_and_starts_at_zero(device):
    kernel = load("""
        def k(out: Tensor[i32]):
            own = K.local_array(K.i32, 4)
            i = K.global_id(0)
            for j in range(i % 4):
                own[j] = own[j] + i + j
            total = 0
            for j in range(4):
                total += own[j]
            out[i] = total
        """)
    want = [sum(i + j for j in range(i % 4)) for i in range(16)]
    assert kernel[2, 8]((16,)).tolist() == want
