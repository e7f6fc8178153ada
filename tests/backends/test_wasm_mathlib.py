"""The wasm backend's SIMD math library on wasmtime against Python's float64 ``math`` (the
op table's scalar functions), lane by lane: every edge value exactly (NaN, infinities,
signed zeros), and a dense sample (random float32 bit patterns, so log-uniform over the
whole range and both signs, plus uniform samples of each function's core range) within the
conformance suite's tolerance. ``python tests/backends/test_wasm_mathlib.py`` prints each
function's largest error in ulps over the dense samples."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from pyburn.backends.wasm import native
from pyburn.backends.wasm.assemble import Function, Module
from pyburn.backends.wasm.mathlib import FUNCTIONS, needed
from pyburn.ops.elementwise import BINARY, UNARY

BINARY_OPS = ("atan2", "pow")
UNARY_OPS = tuple(name for name in FUNCTIONS if name not in BINARY_OPS)
F32 = np.finfo(np.float32)
TINY = float(np.float32(1e-45))  # the smallest subnormal

#: edge values of every function, and of some functions more (domain edges, overflow)
EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, TINY, -TINY, float(F32.max),
         -float(F32.max), float(F32.tiny), -float(F32.tiny), 1.0, -1.0, 0.5, -0.5, 2.0, -2.0,
         1e-30, -1e-30, 1e-7, -1e-7, 1e30, -1e30]
MORE_EDGES = {
    "exp": [88.72283, 88.72284, 88.7229, -87.33654, -87.34, -103.97, -103.972, -104.0, 89.0],
    "exp2": [127.99999, 128.0, -126.0, -149.0, -149.5, -150.0, -151.0, 0.5, -0.5],
    "expm1": [1e-10, -1e-10, 88.72283, 88.7229, -17.0, -18.0, -88.0, 2.0**-26, 0.34],
    "log": [1.0000001, 0.99999994, 2.0**-149, 2.0**-126],
    "log2": [1.0000001, 0.99999994, 2.0**-149, 1024.0],
    "log1p": [-0.99999994, -1.0000001, 1e-10, -1e-10, 0.41421356, -0.29289322, 2.0**24],
    "sin": [3.1415927, 1.5707964, 6000.0, 6000.5, 16367173 * 2.0**72, 2.0**24, 2.0**60],
    "cos": [3.1415927, 1.5707964, 6000.0, 6000.5, 16367173 * 2.0**72, 2.0**24, 2.0**60],
    "tan": [1.5707964, -1.5707964, 1.5707963, 4.712389, 6000.5, 2.0**24, 1e20],
    "asin": [0.99999994, -0.99999994, 1.0000001, -1.0000001],
    "acos": [0.99999994, -0.99999994, 1.0000001, -1.0000001],
    "atan": [2.4142137, 0.41421357, 1e20, -1e20],
    "sinh": [88.0, 89.0, 89.41598, 89.416, -89.41598, -89.416, 1.0, 0.99999994],
    "cosh": [88.0, 89.0, 89.41598, 89.416, -89.41598, -89.416],
    "tanh": [9.0, 9.01, 10.0, 20.0, -20.0],
    "asinh": [2.0**24, 2.0**25, 1e19, 1e20],
    "acosh": [1.0000001, 0.99999994, 2.0**24, 2.0**25, 1e20],
    "atanh": [0.99999994, -0.99999994, 1.0000001, -1.0000001],
    "erf": [0.99999994, 1.0000001, 3.9, 3.92, 4.0, -4.0],
}
#: each function's core range, sampled uniformly
CORE = {"exp": (-90, 90), "exp2": (-130, 130), "expm1": (-2, 2), "log": (0, 4),
        "log2": (0, 4), "log1p": (-1, 2), "sin": (-10, 10), "cos": (-10, 10),
        "tan": (-10, 10), "asin": (-1, 1), "acos": (-1, 1), "atan": (-4, 4),
        "sinh": (-10, 10), "cosh": (-10, 10), "tanh": (-5, 5), "asinh": (-5, 5),
        "acosh": (1, 5), "atanh": (-1, 1), "erf": (-5, 5)}
DENSE = 20_000


def _drivers() -> list[Function]:
    """run_<op>(src, dst, n) applies <op>_f32x4 to n vectors; binary ones read two sources."""
    out = []
    for name in FUNCTIONS:
        binary = name in BINARY_OPS
        params = (("a", "i32"), ("b", "i32"), ("dst", "i32"), ("n", "i32")) if binary else \
            (("a", "i32"), ("dst", "i32"), ("n", "i32"))
        load = "local.get $a v128.load" + (" local.get $b v128.load" if binary else "")
        step = "local.get $b i32.const 16 i32.add local.set $b" if binary else ""
        out.append(Function(f"run_{name}", params, f"""
            block $done loop $next
              local.get $n i32.eqz br_if $done
              local.get $dst {load} call ${name}_f32x4 v128.store
              local.get $a i32.const 16 i32.add local.set $a {step}
              local.get $dst i32.const 16 i32.add local.set $dst
              local.get $n i32.const 1 i32.sub local.set $n
              br $next
            end end"""))
    return out


@cache
def _machine() -> tuple[native.NativeEngine, dict]:
    engine = native.NativeEngine(64)
    module = Module([*needed(list(FUNCTIONS)), *_drivers()], pages=64)
    return engine, engine.instantiate(module.binary())


def evaluate(name: str, *args: np.ndarray) -> np.ndarray:
    """<op>_f32x4 on wasmtime over float32 arrays (of one length)."""
    engine, exports = _machine()
    n = len(args[0])
    padded = [np.zeros(-(-n // 4) * 4, np.float32) for _ in args]
    addresses = []
    for k, (pad, arg) in enumerate(zip(padded, args)):
        pad[:n] = arg
        addresses.append(1024 + k * pad.nbytes)
        engine.write(addresses[-1], pad.tobytes())
    dst = 1024 + len(args) * padded[0].nbytes
    exports[f"run_{name}"](*addresses, dst, len(padded[0]) // 4)
    return np.frombuffer(engine.read(dst, padded[0].nbytes), np.float32)[:n].copy()


def reference(name: str, *args: np.ndarray) -> np.ndarray:
    """The op table's IEEE-correct float64 function on each (float32) input."""
    op = BINARY[name] if name in BINARY_OPS else UNARY[name]
    fn = op.safe or op.py
    return np.array([fn(*(float(v) for v in values)) for values in zip(*args)], np.float64)


def mismatches(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where `got` (float32) is not `want` (float64): NaN-ness, infinities (of the float32
    rounding) and signed zeros exactly, else beyond 1e-6 + 1e-5 |want|."""
    with np.errstate(over="ignore"):
        want32 = want.astype(np.float32)
    bad = np.isnan(got) != np.isnan(want)
    inf = np.isinf(want32) | np.isinf(got)
    bad |= inf & (got != want32)
    zero = want32 == 0
    bad |= zero & (np.signbit(got) != np.signbit(want32))
    ordinary = ~np.isnan(want) & ~inf
    with np.errstate(invalid="ignore"):
        bad |= ordinary & ~(np.abs(got - want) <= 1e-6 + 1e-5 * np.abs(want))
    return np.flatnonzero(bad)


def ulps(got: np.ndarray, want: np.ndarray) -> float:
    """The largest |got - want| in float32 ulps of want, over finite results."""
    with np.errstate(over="ignore"):
        want32 = want.astype(np.float32)
    finite = np.isfinite(want32) & np.isfinite(got)
    spacing = np.spacing(np.abs(want32[finite])).astype(np.float64)
    return float(np.max(np.abs(got[finite] - want[finite]) / spacing, initial=0.0))


def _random_floats(rng: np.random.Generator, n: int) -> np.ndarray:
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return bits[np.isfinite(bits)]


def dense_sample(name: str) -> tuple[np.ndarray, ...]:
    """The dense inputs of op `name`: half random bit patterns, half its core range."""
    rng = np.random.default_rng(sum(map(ord, name)))
    if name == "atan2":
        a = np.concatenate([_random_floats(rng, DENSE // 2), rng.uniform(-5, 5, DENSE // 2)])
        b = np.concatenate([_random_floats(rng, DENSE // 2), rng.uniform(-5, 5, DENSE // 2)])
        n = min(len(a), len(b))
        return a[:n].astype(np.float32), b[:n].astype(np.float32)
    if name == "pow":
        q = DENSE // 4
        a = np.concatenate([rng.uniform(0, 10, q), rng.uniform(0.9, 1.1, q),
                            -rng.integers(1, 20, q).astype(float), _random_floats(rng, q)])
        b = np.concatenate([rng.uniform(-35, 35, q), rng.uniform(-800, 800, q),
                            rng.integers(-30, 30, q).astype(float),
                            rng.uniform(-3, 3, q) * 10.0 ** rng.uniform(-3, 1, q)])
        n = min(len(a), len(b))
        return a[:n].astype(np.float32), b[:n].astype(np.float32)
    lo, hi = CORE[name]
    x = np.concatenate([_random_floats(rng, DENSE // 2), rng.uniform(lo, hi, DENSE // 2)])
    return (x.astype(np.float32),)


def edge_sample(name: str) -> tuple[np.ndarray, ...]:
    values = np.array(EDGES + MORE_EDGES.get(name, []), np.float32)
    if name in BINARY_OPS:
        grid = np.array(EDGES + [3.0, -3.0, 0.25, 1.5, -1.5, 1e-40], np.float32)
        a, b = np.meshgrid(grid, grid)
        return a.ravel(), b.ravel()
    return (values,)


def _report(name: str, args: tuple[np.ndarray, ...], got: np.ndarray,
            want: np.ndarray) -> str:
    bad = mismatches(got, want)
    lines = [f"{len(bad)} mismatches of {name}:"]
    for i in bad[:10]:
        inputs = ", ".join(repr(float(arg[i])) for arg in args)
        lines.append(f"  {name}({inputs}) = {float(got[i])!r}, want {float(want[i])!r}")
    return "\n".join(lines)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_edge_values_give_the_ieee_results(name):
    args = edge_sample(name)
    got, want = evaluate(name, *args), reference(name, *args)
    assert len(mismatches(got, want)) == 0, _report(name, args, got, want)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_dense_samples_are_within_the_conformance_tolerance(name):
    args = dense_sample(name)
    got, want = evaluate(name, *args), reference(name, *args)
    assert len(mismatches(got, want)) == 0, _report(name, args, got, want)
    assert ulps(got, want) <= 8, f"{name}: {ulps(got, want):.2f} ulps"


def test_needed_gives_each_function_and_its_callees_once():
    names = [f.name for f in needed(["tanh", "asinh", "atanh", "exp"])]
    assert sorted(names) == sorted({"expm1_f32x4", "tanh_f32x4", "log1p_f32x4",
                                    "asinh_f32x4", "atanh_f32x4", "exp_f32x4"})
    assert names.index("expm1_f32x4") < names.index("tanh_f32x4")
    assert all(not f.export and f.results == ("v128",) for f in FUNCTIONS.values())


def test_the_library_assembles_as_wabt_assembles_it():
    from .test_wasm_assemble import wabt  # (the wabt runner of the assembler's tests)

    module = Module([*needed(list(FUNCTIONS)), *_drivers()], pages=64)
    assert module.binary() == wabt([module])[0]


def ulp_report() -> dict[str, float]:
    """Each function's largest error in ulps over its dense samples."""
    out = {}
    for name in FUNCTIONS:
        args = dense_sample(name)
        out[name] = ulps(evaluate(name, *args), reference(name, *args))
    return out


if __name__ == "__main__":
    for op_name, err in ulp_report().items():
        print(f"{op_name:6} {err:6.2f} ulps")
