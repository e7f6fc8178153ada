"""The wasm backend's division, remainder, power and shift functions (`division`) on
wasmtime against the op table's scalar functions, bit for bit: float32 ones against
``safe`` (or ``py``) in float64 rounded to float32, on a grid of edge values and on random
pairs (NaN-ness, and else the bits, so the sign of zero too); int32 ones against ``py_int``
(or ``py``) wrapped to int32, on a grid of edge values, on random int32 pairs and on all
pairs of uint8 values."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from pyburn.backends.wasm import native
from pyburn.backends.wasm.assemble import Function, Module
from pyburn.backends.wasm.division import FUNCTIONS, needed
from pyburn.ops.elementwise import BINARY

FLOAT_OPS = ("floor_divide", "remainder", "fmod")
INT_OPS = ("floor_divide", "remainder", "fmod", "pow", "left_shift", "right_shift")
F32 = np.finfo(np.float32)
TINY = float(np.float32(1e-45))  # the smallest subnormal
INT_MIN, INT_MAX = -2**31, 2**31 - 1

FLOAT_EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, TINY, -TINY,
               float(F32.max), -float(F32.max), float(F32.tiny), -float(F32.tiny), 2.0, -2.0,
               3.0, -3.0, 0.5, -0.5, 0.1, -0.1, 7.0, -7.0, 1e-38, -1e-38, 3e38, -3e38,
               1e-40, -1e-40, 1e10, -1e10, 16777216.0, 16777217.0, 1.5, -2.5, 1e-7]
INT_EDGES = [0, 1, -1, 2, -2, 3, -3, 7, -7, INT_MIN, INT_MIN + 1, INT_MAX, INT_MAX - 1,
             31, 32, 33, 63, 64, 65, -31, -32, -33, -63, -64, -65, 100, 128, 255, 256,
             46341, -46341, 65536, 0x55555555]


def _drivers() -> list[Function]:
    """run_<function>(a, b, dst, n) applies <function> to n pairs of vectors."""
    return [Function(f"run_{name}", (("a", "i32"), ("b", "i32"), ("dst", "i32"), ("n", "i32")),
                     f"""
            block $done loop $next
              local.get $n i32.eqz br_if $done
              local.get $dst local.get $a v128.load local.get $b v128.load call ${name}
              v128.store
              local.get $a i32.const 16 i32.add local.set $a
              local.get $b i32.const 16 i32.add local.set $b
              local.get $dst i32.const 16 i32.add local.set $dst
              local.get $n i32.const 1 i32.sub local.set $n
              br $next
            end end""") for name in FUNCTIONS]


def _module() -> Module:
    return Module([*needed(list(FUNCTIONS)), *_drivers()], pages=64)


@cache
def _machine() -> tuple[native.NativeEngine, dict]:
    engine = native.NativeEngine(64)
    return engine, engine.instantiate(_module().binary())


def evaluate(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Function `name` on wasmtime over two arrays of 4-byte lanes (of one length and dtype)."""
    engine, exports = _machine()
    n = len(a)
    padded = []
    for arg in (a, b):
        pad = np.zeros(-(-n // 4) * 4, a.dtype)
        pad[:n] = arg
        padded.append(pad)
    size = padded[0].nbytes
    engine.write(1024, padded[0].tobytes())
    engine.write(1024 + size, padded[1].tobytes())
    exports[f"run_{name}"](1024, 1024 + size, 1024 + 2 * size, len(padded[0]) // 4)
    return np.frombuffer(engine.read(1024 + 2 * size, size), a.dtype)[:n].copy()


def float_reference(op_name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    op = BINARY[op_name]
    fn = op.safe or op.py
    with np.errstate(over="ignore"):
        return np.array([fn(float(x), float(y)) for x, y in zip(a, b)],
                        np.float64).astype(np.float32)


def _wrap(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def int_reference(op_name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    op = BINARY[op_name]
    fn = op.py_int or op.py
    return np.array([_wrap(fn(int(x), int(y))) for x, y in zip(a, b)], np.int32)


def _grid(values: list, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(np.array(values, dtype), np.array(values, dtype))
    return a.ravel(), b.ravel()


def _float_pairs() -> tuple[np.ndarray, np.ndarray]:
    """Edge values, random bit patterns (huge and tiny quotients), ordinary values, exact
    multiples (zero remainders) and near-multiples."""
    rng = np.random.default_rng(7)
    a0, b0 = _grid(FLOAT_EDGES, np.float32)
    n = 6000
    bits = [rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
            for _ in range(2)]
    ordinary = [rng.uniform(-100, 100, n).astype(np.float32) for _ in range(2)]
    b_mul = rng.uniform(-10, 10, n).astype(np.float32)
    a_mul = (b_mul * rng.integers(-1000, 1000, n)).astype(np.float32)
    toward = np.where(rng.random(n) < 0.5, -np.inf, np.inf).astype(np.float32)
    near = np.nextafter(a_mul, toward)
    a = np.concatenate([a0, bits[0], ordinary[0], a_mul, near])
    b = np.concatenate([b0, bits[1], ordinary[1], b_mul, b_mul])
    return a.astype(np.float32), b.astype(np.float32)


def _int_pairs() -> tuple[np.ndarray, np.ndarray]:
    """Edge values, random int32 pairs, small pairs, random bases with small exponents and
    shift amounts, and every pair of uint8 values."""
    rng = np.random.default_rng(11)
    n = 4000
    a0, b0 = _grid(INT_EDGES, np.int64)
    wide = [rng.integers(INT_MIN, INT_MAX + 1, n) for _ in range(2)]
    small = [rng.integers(-50, 51, n) for _ in range(2)]
    a_exp, b_exp = rng.integers(INT_MIN, INT_MAX + 1, n), rng.integers(-70, 71, n)
    u8 = _grid(list(range(256)), np.int64)
    a = np.concatenate([a0, wide[0], small[0], a_exp, u8[0]])
    b = np.concatenate([b0, wide[1], small[1], b_exp, u8[1]])
    return a.astype(np.int32), b.astype(np.int32)


def _report(name: str, a: np.ndarray, b: np.ndarray, got: np.ndarray, want: np.ndarray,
            bad: np.ndarray) -> str:
    lines = [f"{len(bad)} mismatches of {name} in {len(a)}:"]
    for i in bad[:10]:
        lines.append(f"  {name}({a[i].item()!r}, {b[i].item()!r}) = {got[i].item()!r}, "
                     f"want {want[i].item()!r}")
    return "\n".join(lines)


@pytest.mark.parametrize("op_name", FLOAT_OPS)
def test_float32_lanes_match_the_op_table_bit_for_bit(op_name):
    a, b = _float_pairs()
    got = evaluate(f"{op_name}_f32x4", a, b)
    want = float_reference(op_name, a, b)
    nan = np.isnan(want)
    bad = np.flatnonzero((np.isnan(got) != nan) |
                         (~nan & (got.view(np.uint32) != want.view(np.uint32))))
    assert len(bad) == 0, _report(f"{op_name}_f32x4", a, b, got, want, bad)


def test_float32_edge_cases_by_hand():
    cases = {"floor_divide": [(3e38, 1e-38, math.inf), (-1.0, math.inf, -1.0),
                              (1.0, -math.inf, -1.0), (0.0, -5.0, -0.0), (-0.0, 5.0, -0.0),
                              (5.0, 0.0, math.inf), (-5.0, 0.0, -math.inf),
                              (math.inf, 2.0, math.nan), (7.0, -2.0, -4.0)],
             "remainder": [(3e38, TINY, 0.0), (-7.0, 2.0, 1.0), (7.0, -2.0, -1.0),
                           (-4.0, 2.0, 0.0), (4.0, -2.0, -0.0), (-1.0, math.inf, math.inf),
                           (1.0, 0.0, math.nan)],
             "fmod": [(3e38, TINY, 0.0), (-4.0, 2.0, -0.0), (-7.0, 2.0, -1.0),
                      (5.0, math.inf, 5.0), (math.inf, 5.0, math.nan)]}
    for op_name, rows in cases.items():
        a, b, want = (np.array(column, np.float32) for column in zip(*rows))
        got = evaluate(f"{op_name}_f32x4", a, b)
        assert np.array_equal(got, want, equal_nan=True), (op_name, got, want)
        number = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[number]), np.signbit(want[number])), op_name
        assert np.array_equal(float_reference(op_name, a, b), want, equal_nan=True)


@pytest.mark.parametrize("op_name", INT_OPS)
def test_int32_lanes_match_the_op_table_wrapped(op_name):
    a, b = _int_pairs()
    got = evaluate(f"{op_name}_i32x4", a, b)
    want = int_reference(op_name, a, b)
    bad = np.flatnonzero(got != want)
    assert len(bad) == 0, _report(f"{op_name}_i32x4", a, b, got, want, bad)


def test_int32_edge_cases_by_hand():
    cases = {"floor_divide": [(INT_MIN, -1, INT_MIN), (7, 0, 0), (-7, 2, -4), (7, -2, -4)],
             "remainder": [(INT_MIN, -1, 0), (7, 0, 0), (-7, 2, 1), (7, -2, -1)],
             "fmod": [(INT_MIN, -1, 0), (7, 0, 0), (-7, 2, -1), (7, -2, 1)],
             "pow": [(2, 31, INT_MIN), (2, 32, 0), (3, 40, _wrap(3**40)), (-1, -3, -1),
                     (-1, INT_MIN, 1), (1, -5, 1), (0, -1, 0), (5, -1, 0), (0, 0, 1)],
             "left_shift": [(1, 31, INT_MIN), (1, 32, 0), (1, 63, 0), (1, 64, 0), (1, -1, 0)],
             "right_shift": [(-8, 1, -4), (-8, 33, -1), (8, 33, 0), (-8, 64, -1),
                             (-8, -1, -1), (8, -1, 0), (INT_MIN, 31, -1)]}
    for op_name, rows in cases.items():
        a, b, want = (np.array(column, np.int32) for column in zip(*rows))
        assert np.array_equal(evaluate(f"{op_name}_i32x4", a, b), want), op_name
        assert np.array_equal(int_reference(op_name, a, b), want), op_name


def test_needed_gives_each_function_and_its_callees_once():
    names = [f.name for f in needed(["floor_divide_f32x4", "remainder_f32x4", "pow_i32x4"])]
    assert sorted(names) == sorted({"fmod_exact", "floor_divide_f32_lane",
                                    "floor_divide_f32x4", "remainder_f32_lane",
                                    "remainder_f32x4", "pow_i32x4"})
    assert names.index("fmod_exact") < names.index("floor_divide_f32_lane") < \
        names.index("floor_divide_f32x4")
    assert set(FUNCTIONS) == {*(f"{op}_f32x4" for op in FLOAT_OPS),
                              *(f"{op}_i32x4" for op in INT_OPS)}
    assert all(not f.export and f.results == ("v128",) and f.params == (("a", "v128"),
                                                                        ("b", "v128"))
               for f in FUNCTIONS.values())


def test_the_functions_assemble_as_wabt_assembles_them():
    from .test_wasm_assemble import wabt  # (the wabt runner of the assembler's tests)

    module = _module()
    assert module.binary() == wabt([module])[0]
