"""Generated kernels: random expressions over float32 and int32 inputs, written as kernel
source, give on every device (interpreter, numpy executor, WGSL) what the same expressions
give computed directly with numpy's float32 and int32 arithmetic."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyburn

from .sources import load

N = 37  # not a multiple of the workgroup: the bounds check matters

FLOAT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "min({}, {})", "max({}, {})"]
FLOAT_UNARY = ["K.tanh({})", "K.exp(K.tanh({}))", "K.sqrt(abs({}))", "abs({})", "(-{})",
               "K.floor({})"]
INT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "min({}, {})", "max({}, {})",
              "({} & {})", "({} ^ {})", "({} | {})"]


def _expressions(kind: str) -> st.SearchStrategy[str]:
    if kind == "f":
        leaves = st.sampled_from(["a", "b", "1.5", "0.25", "K.f32(p)"])
        return st.recursive(leaves, lambda inner: st.one_of(
            st.tuples(st.sampled_from(FLOAT_BINARY), inner, inner).map(
                lambda t: t[0].format(t[1], t[2])),
            st.tuples(st.sampled_from(FLOAT_UNARY), inner).map(lambda t: t[0].format(t[1])),
            st.tuples(inner, inner, inner, inner).map(
                lambda t: f"K.select({t[0]} > {t[1]}, {t[2]}, {t[3]})")), max_leaves=8)
    leaves = st.sampled_from(["p", "q", "3", "(-7)", "K.i32(a)"])
    return st.recursive(leaves, lambda inner: st.tuples(st.sampled_from(INT_BINARY), inner,
                                                        inner).map(
        lambda t: t[0].format(t[1], t[2])), max_leaves=8)


class _NumpyLanguage:
    """The kernel language's names for numpy arrays: the reference of the expressions."""

    tanh, exp, sqrt, floor = np.tanh, np.exp, np.sqrt, np.floor

    @staticmethod
    def f32(v: np.ndarray) -> np.ndarray:
        return v.astype(np.float32)

    @staticmethod
    def i32(v: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(v), np.trunc(np.nan_to_num(v)), 0).astype(np.int64) \
            .astype(np.int32)

    @staticmethod
    def select(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(c, a, b)


def _reference(expression: str, values: dict[str, np.ndarray]) -> np.ndarray:
    names = {"K": _NumpyLanguage, "min": np.minimum, "max": np.maximum, "abs": np.abs,
             **values}
    with np.errstate(all="ignore"):
        return np.asarray(eval(expression, names))  # our own generated text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_expressions_match_numpy(device, data):
    floating, integer = data.draw(_expressions("f")), data.draw(_expressions("i"))
    kernel = load(f"""
        def k(out: Tensor[f32], iout: Tensor[i32], x: Tensor[f32], y: Tensor[f32],
              u: Tensor[i32], v: Tensor[i32], n: i32):
            i = K.global_id(0)
            if i < n:
                a = x[i]
                b = y[i]
                p = u[i]
                q = v[i]
                out[i] = {floating}
                iout[i] = {integer}
        """)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    values = {"a": (rng.standard_normal(N) * 3).astype(np.float32),
              "b": (rng.standard_normal(N) * 3).astype(np.float32),
              "p": rng.integers(-1000, 1000, N).astype(np.int32),
              "q": rng.integers(-(2**31), 2**31, N).astype(np.int32)}
    on = {k: pyburn.from_numpy(v, device=device) for k, v in values.items()}
    out, iout = kernel[(N + 15) // 16, 16]((N,), (N,), on["a"], on["b"], on["p"], on["q"], N)
    want = np.broadcast_to(_reference(floating, values), (N,)).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), want, rtol=2e-6, atol=1e-6,
                               err_msg=f"{floating} on {device}")
    want_int = np.broadcast_to(_reference(integer, values), (N,)).astype(np.int32)
    np.testing.assert_array_equal(iout.numpy(), want_int, err_msg=f"{integer} on {device}")
