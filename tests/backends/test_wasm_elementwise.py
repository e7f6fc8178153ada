"""The wasm backend's elementwise kernels (generated from the op table's ``wasm`` column) on
the engines here, against the op table's own scalar functions: every op with a column, on
each dtype its domain takes, at edge values and random ones, lengths that leave a tail."""

from __future__ import annotations

import math
import random
import struct

import pytest

from pyburn.backends.wasm import native
from pyburn.backends.wasm.assemble import Module
from pyburn.backends.wasm.elementwise import kernel
from pyburn.backends.wasm.kinds import KINDS
from pyburn.dtypes import bool_, float32, int32, uint8
from pyburn.ops.elementwise import BINARY, UNARY, ElementwiseOp

FORMATS = {float32: "f", int32: "i", uint8: "B", bool_: "?"}
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-40, -1e30, 3.4e38, math.inf, -math.inf,
          math.nan, 7.25, -0.75]
INTS = [0, 1, -1, 2, -7, 100, 2**31 - 1, -(2**31), 12345, -99]
#: the ops whose WebAssembly calls the math library: its own tests check their accuracy
MATH = {name for name, op in {**UNARY, **BINARY}.items() if "_f32x4" in op.wasm}
#: float32 ulps an op may be off the correctly rounded result (1 / sqrt(x) rounds twice, as
#: on wgpu); every other op here is exact
ULPS = {"rsqrt": 1}


def _dtypes(op: ElementwiseOp) -> list:
    return {"float": [float32], "rounding": [float32, int32], "numeric": [float32, int32, uint8],
            "compare": [float32, int32, uint8], "logical": [float32, int32, bool_],
            "bitwise": [int32, uint8]}[op.domain]


def _values(dtype, n: int) -> list:
    rng = random.Random(n)
    if dtype is float32:
        base = FLOATS + [rng.uniform(-50, 50) for _ in range(n)]
        return [struct.unpack("<f", struct.pack("<f", v))[0] for v in base][:n]
    if dtype is int32:
        return (INTS + [rng.randint(-(2**31), 2**31 - 1) for _ in range(n)])[:n]
    if dtype is uint8:
        return [rng.randint(0, 255) for _ in range(n)]
    return [rng.random() < 0.5 for _ in range(n)]


def _fit(value, dtype):
    """`value` as `dtype` holds it: float32 rounding, integer wrapping."""
    if dtype is float32:
        try:
            return struct.unpack("<f", struct.pack("<f", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)
    if dtype is int32:
        return (int(value) + 2**31) % 2**32 - 2**31
    if dtype is uint8:
        return int(value) % 256
    return bool(value)


def _same(got, want, ulps: int = 0) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if ulps and isinstance(want, float) and math.isfinite(want):
        return abs(got - want) <= ulps * 2.0 ** (math.frexp(want)[1] - 24)
    return got == want


CASES = [(op, dtype) for op in [*UNARY.values(), *BINARY.values()]
         if op.wasm and op.name not in MATH for dtype in _dtypes(op)]


@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o.name}-{d.name}" for o, d in CASES])
def test_a_kernel_computes_what_the_op_table_says(op, dtype):
    out = bool_ if op.returns_bool else dtype
    engine = native.NativeEngine(1)
    exports = engine.instantiate(Module(kernel(op, KINDS[dtype], KINDS[out])).binary())
    n = 23  # five vectors and a tail of three
    operands = [_values(dtype, n) for _ in range(op.arity)]
    if op.arity == 2:
        random.Random(1).shuffle(operands[1])
    fmt = FORMATS[dtype]
    addresses = [1024 + 256 * k for k in range(op.arity)]
    for address, values in zip(addresses, operands):
        engine.write(address, struct.pack(f"<{n}{fmt}", *values))
    exports[f"{op.name}_{dtype.name}"](4096, *addresses, 1, n, *[0] * op.arity)  # one row
    got = list(struct.unpack(f"<{n}{FORMATS[out]}", engine.read(4096, n * KINDS[out].size)))
    integer = dtype is not float32
    scalar = (op.py_int if integer and op.py_int else None) or op.safe or op.py
    want = [_fit(scalar(*(bool(v) if dtype is bool_ else v for v in args)), out)
            for args in zip(*operands)]
    ulps = ULPS.get(op.name, 0)
    bad = [(args, g, w) for args, g, w in zip(zip(*operands), got, want)
           if not _same(g, w, ulps)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("broadcast", [(False, True), (True, False), (True, True)])
def test_broadcast_operands_are_read_in_place_row_by_row(broadcast):
    """3 rows of 7: a broadcast operand is one element a row (its own step between rows),
    the other a contiguous row; the output is contiguous."""
    op, kind = BINARY["sub"], KINDS[float32]
    engine = native.NativeEngine(1)
    name = "sub_float32_b" + "".join(str(int(b)) for b in broadcast)
    exports = engine.instantiate(Module(kernel(op, kind, kind, broadcast)).binary())
    rows, n = 3, 7
    full = [float(v) for v in range(rows * n)]
    column = [100.0, 200.0, 300.0]
    operands, steps = [], []
    for spread in broadcast:
        operands.append(column if spread else full)
        steps.append(4 if spread else 4 * n)
    addresses = [1024 + 512 * k for k in range(2)]
    for address, values in zip(addresses, operands):
        engine.write(address, struct.pack(f"<{len(values)}f", *values))
    engine.write(4096, bytes(4 * rows * n + 16))
    exports[name](4096, *addresses, rows, n, *steps)
    got = struct.unpack(f"<{rows * n}f", engine.read(4096, 4 * rows * n))
    value = [lambda r, i, v=v, s=s: v[r] if s else v[r * n + i] for v, s in zip(operands,
                                                                               broadcast)]
    assert list(got) == [value[0](r, i) - value[1](r, i) for r in range(rows) for i in range(n)]
    assert engine.read(4096 + 4 * rows * n, 16) == bytes(16)  # nothing past the output


def test_every_op_of_the_table_has_its_webassembly():
    """The wasm device runs every elementwise op: a new op needs its column (the kernel
    generator refuses an op without one)."""
    assert [name for name, op in {**UNARY, **BINARY}.items() if not op.wasm] == []
