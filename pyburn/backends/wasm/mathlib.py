"""The wasm backend's SIMD math library: one WebAssembly function per math op, on four
float32 lanes at a time (``(param $x v128) (result v128)``; binary ones take ``$a $b``),
named ``<op>_f32x4`` and not exported: a kernel module includes `needed` ones and calls them.

Each computes, lane by lane, what Python's ``math`` computes in float64 on the float32
input, rounded to float32, edge cases included as pyburn's op table has them (NaN in gives
NaN out; overflow inf, underflow 0; the IEEE results at 0, -0, inf and -inf; NaN outside a
domain; signed zeros where math keeps them). The polynomials' coefficients and the split
constants come from ``scripts/fit_mathlib.py`` (weighted minimax fits on Chebyshev nodes);
each function says which range reduction and which fit it uses. All is float32 SIMD except
pow and the reduction of |x| > 6000 for sin, cos and tan, which work in float64 lanes.

Largest error measured, in float32 ulps of the float64 result, over the dense samples of
tests/backends/test_wasm_mathlib.py (``python tests/backends/test_wasm_mathlib.py`` prints
them): exp 0.96, exp2 1.01, expm1 1.38, log 1.81, log2 2.47, log1p 1.63, sin 1.67,
cos 2.01, tan 3.03, asin 1.73, acos 1.11, atan 1.74, sinh 1.35, cosh 1.29, tanh 1.93,
asinh 2.01, acosh 2.38, atanh 2.23, erf 0.80, atan2 1.92, pow 0.50. Over a million samples
per range (numpy's float64 functions as the reference) the worst were: log2 3.00, tan 4.05,
acosh 2.90, the rest at most 2.6.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable

from .assemble import Function

# ---- constants and coefficients, as scripts/fit_mathlib.py prints them ---------------------
LN2_HI_LO = (0.693145751953125, 1.428606765330187e-06)  # k * hi exact for |k| < 256
PIO2_PARTS = (1.57080078125, -4.453584551811218e-06, -8.706138032721356e-10,
              6.223371969669989e-14)  # Cody-Waite: k * part exact for k < 4096
PIO2_HI_LO = (1.5707963705062866, -4.371138828673793e-08)
PIO4_HI_LO = (0.7853981852531433, -2.1855694143368964e-08)
PI_HI_LO = (3.1415927410125732, -8.742277657347586e-08)
TWO_OVER_PI_PIECES = (0.6366197466850281, 2.5682552973194106e-08, 2.937095214933759e-16,
                      3.2543794001732456e-23, 1.2089613708828537e-29, 5.667556795740071e-37,
                      2.6204031112097215e-44, 7.053957680880629e-52)
PIO2_F64 = 1.5707963267948966
LOG2E_HI_LO = (1.4426950216293335, 1.925963033500011e-08)
E88_HALF = 8.258181330680653e+37
LOG2E_F64 = 1.4426950408889634
LN2 = 0.6931471805599453

EXP_P = (0.4999999403953552, 0.16666516661643982, 0.04166828468441963, 0.00836925022304058,
         0.0013820468448102474)
EXP2_Q = (0.6931471824645996, 0.24022647738456726, 0.05550359562039375, 0.00961849931627512,
          0.0013390970416367054, 0.00015329310554079711)
LOG_Q = (0.3333333134651184, 0.20000484585762024, 0.14249581098556519, 0.12134286761283875)
SIN_S = (-0.1666666716337204, 0.008333379402756691, -0.00019852982950396836,
         2.8308018045208883e-06)
COS_C = (0.0416666679084301, -0.0013888977700844407, 2.4820974431349896e-05,
         -2.8768067750206683e-07)
ATAN_P = (-0.3333333134651184, 0.19999802112579346, -0.14279133081436157, 0.11009648442268372,
          -0.08283917605876923, 0.04353700578212738)
ASIN_P = (0.16666659712791443, 0.07500521838665009, 0.04451335221529007, 0.0318395234644413,
          0.014312174171209335, 0.03770211711525917)
SINH_P = (0.1666666716337204, 0.00833328440785408, 0.00019856210565194488,
          2.5762196855794173e-06, 9.945220824647549e-08)
ERF_E = (0.12837916612625122, -0.3761262595653534, 0.11283522844314575, -0.026844970881938934,
         0.005141775123775005, -0.0006814051885157824, -8.259194146376103e-05,
         0.00010936327453237027, -2.9513257686630823e-05)
ERFC_R = (0.0006806509918533266, 0.5534807443618774, 0.07438340783119202, -0.5772895812988281,
          0.7083305716514587, -0.5075407028198242, 0.22864453494548798, -0.060195598751306534,
          0.007089549209922552)
POW_LOG_Q = (0.3333333333813786, 0.1999999772047761, 0.1428606509880372, 0.11087619145243158,
             0.09799388493816495)
POW_EXP2_Q = (0.6931471805482122, 0.24022650698110692, 0.055504109352681984,
              0.009618128616117973, 0.0013333454859002696, 0.00015403825462424666,
              1.5309156526426066e-05, 1.3178934079234262e-06)

SQRT_HALF_BITS = 0x3F3504F3  # the float32 just below sqrt(1/2)
SIGN = -0x80000000  # the sign bit of each lane
BIG_TRIG = 6000.0  # from here on sin, cos and tan reduce in float64 (Cody-Waite needs k < 4096)


# ---- WebAssembly text of expressions: each string pushes one v128 -------------------------

def _f32(value: float) -> str:
    return repr(struct.unpack("<f", struct.pack("<f", value))[0])


def k(value: float) -> str:
    """Four float32 lanes of `value`."""
    v = _f32(value)
    return f"v128.const f32x4 {v} {v} {v} {v}"


def ki(value: int) -> str:
    """Four int32 lanes of `value`."""
    return f"v128.const i32x4 {value} {value} {value} {value}"


def kd(value: float) -> str:
    """Two float64 lanes of `value`."""
    return f"v128.const f64x2 {value!r} {value!r}"


def op(name: str, *args: str) -> str:
    """Instruction `name` on the values the `args` push."""
    return " ".join((*args, name))


def add(a: str, b: str) -> str:
    """a + b on float32 lanes."""
    return op("f32x4.add", a, b)


def sub(a: str, b: str) -> str:
    """a - b on float32 lanes."""
    return op("f32x4.sub", a, b)


def mul(a: str, b: str) -> str:
    """a * b on float32 lanes."""
    return op("f32x4.mul", a, b)


def div(a: str, b: str) -> str:
    """a / b on float32 lanes."""
    return op("f32x4.div", a, b)


def sel(mask: str, yes: str, no: str) -> str:
    """`yes` in the lanes where `mask` is all ones, else `no`."""
    return op("v128.bitselect", yes, no, mask)


def horner(x: str, coeffs: tuple[float, ...], shape: str = "f32x4") -> str:
    """coeffs[0] + x * (coeffs[1] + x * (...)) by Horner's rule (`x` a local.get)."""
    const = k if shape == "f32x4" else kd
    acc = const(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = op(f"{shape}.add", op(f"{shape}.mul", acc, x), const(c))
    return acc


class _Code:
    """A function body under construction: its lines and the locals it sets."""

    def __init__(self, *params: str):
        self.params = params
        self.lines: list[str] = []
        self.locals: dict[str, str] = {}

    def let(self, name: str, expr: str) -> str:
        """Set v128 local `name` to `expr`; its local.get."""
        if name not in self.params:
            self.locals.setdefault(name, "v128")
        self.lines.append(f"{expr} local.set ${name}")
        return f"local.get ${name}"

    def function(self, op_name: str, result: str, doc: str) -> Function:
        body = "\n".join([f";; {doc}", *self.lines, result])
        return Function(f"{op_name}_f32x4", tuple((p, "v128") for p in self.params), body,
                        results=("v128",), locals=tuple(self.locals.items()), export=False)


def _call(name: str, arg: str) -> str:
    return f"{arg} call ${name}_f32x4"


def _signbit(x: str) -> str:
    return op("v128.and", x, ki(SIGN))


def _scale(c: _Code, p: str, kint: str) -> str:
    """p * 2^k for int32 lanes k in [-252, 254]: two exact powers of two, so that one
    rounding makes a subnormal or infinite result."""
    k1 = c.let("k1", op("i32x4.shr_s", kint, "i32.const 1"))
    k2 = op("i32x4.sub", kint, k1)
    two = [op("i32x4.shl", op("i32x4.add", e, ki(127)), "i32.const 23") for e in (k1, k2)]
    return mul(mul(p, two[0]), two[1])


def _log_parts(c: _Code, v: str, subnormal: bool = True) -> tuple[str, str]:
    """v = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), for finite v > 0: (e, f) as
    float32 locals, both exact (subnormal v scaled by 2^23 first where `subnormal`)."""
    if subnormal:
        tiny = c.let("tiny", op("f32x4.lt", v, k(2.0**-126)))
        v = sel(tiny, mul(v, k(2.0**23)), v)
    ix = c.let("ix", op("i32x4.sub", v, ki(SQRT_HALF_BITS)))
    e = op("f32x4.convert_i32x4_s", op("i32x4.shr_s", ix, "i32.const 23"))
    if subnormal:
        e = add(e, sel(tiny, k(-23.0), k(0.0)))
    m = op("i32x4.add", op("v128.and", ix, ki(0x7FFFFF)), ki(SQRT_HALF_BITS))
    return c.let("e", e), c.let("f", sub(m, k(1.0)))


def _log1p_poly(c: _Code, f: str) -> str:
    """log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: 2 atanh(s), s = f / (2 + f), as
    t (1 + z LOG_Q(z)) with t = 2s, z = s^2 (fit: LOG_Q, relative error 2.5e-11)."""
    t = c.let("t", div(add(f, f), add(f, k(2.0))))
    z = c.let("z", mul(mul(t, t), k(0.25)))
    return add(t, mul(mul(t, z), horner(z, LOG_Q)))


# ---- exp, exp2, expm1 ------------------------------------------------------------------------

def _exp() -> Function:
    c = _Code("x")
    x = c.let("xc", op("f32x4.min", op("f32x4.max", "local.get $x", k(-104.0)), k(89.0)))
    kf = c.let("kf", op("f32x4.nearest", mul(x, k(LOG2E_HI_LO[0]))))
    r = c.let("r", sub(sub(x, mul(kf, k(LN2_HI_LO[0]))), mul(kf, k(LN2_HI_LO[1]))))
    p = add(k(1.0), add(r, mul(mul(r, r), horner(r, EXP_P))))
    return c.function("exp", _scale(c, p, op("i32x4.trunc_sat_f32x4_s", kf)),
                      "e^x = 2^k e^r, r = x - k ln2 (ln2 in two parts), |r| <= ln2/2; "
                      "e^r = 1 + r + r^2 EXP_P(r) (fit: relative error 3.4e-9)")


def _exp2() -> Function:
    c = _Code("x")
    x = c.let("xc", op("f32x4.min", op("f32x4.max", "local.get $x", k(-151.0)), k(129.0)))
    kf = c.let("kf", op("f32x4.nearest", x))
    r = c.let("r", sub(x, kf))
    p = add(k(1.0), mul(r, horner(r, EXP2_Q)))
    return c.function("exp2", _scale(c, p, op("i32x4.trunc_sat_f32x4_s", kf)),
                      "2^x = 2^k 2^r, k = nearest(x), |r| <= 1/2: 2^r = 1 + r EXP2_Q(r) "
                      "(fit: relative error 3.0e-9)")


def _expm1() -> Function:
    c = _Code("x")
    x = c.let("xc", op("f32x4.min", op("f32x4.max", "local.get $x", k(-87.0)), k(89.0)))
    kf = c.let("kf", op("f32x4.nearest", mul(x, k(LOG2E_HI_LO[0]))))
    r = c.let("r", sub(sub(x, mul(kf, k(LN2_HI_LO[0]))), mul(kf, k(LN2_HI_LO[1]))))
    em = add(r, mul(mul(r, r), horner(r, EXP_P)))
    kint = c.let("kint", op("i32x4.trunc_sat_f32x4_s", kf))
    clamped = op("i32x4.max_s", op("i32x4.min_s", kint, ki(25)), ki(-126))
    inverse = op("i32x4.shl", op("i32x4.sub", ki(127), clamped), "i32.const 23")  # 2^-k
    v = _scale(c, add(em, sub(k(1.0), inverse)), kint)
    tiny = op("f32x4.lt", op("f32x4.abs", "local.get $x"), k(2.0**-26))
    return c.function("expm1", sel(tiny, "local.get $x", v),
                      "e^x - 1 = 2^k (e^r - 1 + 1 - 2^-k), the reduction and polynomial of "
                      "exp, e^r - 1 = r + r^2 EXP_P(r) (exact for k = 0, and x itself below "
                      "2^-26, so -0 stays -0)")


# ---- log, log2, log1p ------------------------------------------------------------------------

def _log_edges(x: str, v: str, one: float = 0.0) -> str:
    """The IEEE log results: -inf at `one` (0 for log), inf at inf, NaN below or NaN."""
    v = sel(op("f32x4.eq", x, k(one)), k(float("-inf")), v)
    v = sel(op("f32x4.eq", x, k(float("inf"))), k(float("inf")), v)
    return sel(op("f32x4.ge", x, k(one)), v, k(float("nan")))


def _log(base2: bool) -> Function:
    c = _Code("x")
    e, f = _log_parts(c, "local.get $x")
    lm = c.let("lm", _log1p_poly(c, f))
    if base2:
        v = add(e, add(mul(lm, k(LOG2E_HI_LO[0])), mul(lm, k(LOG2E_HI_LO[1]))))
    else:
        v = add(mul(e, k(LN2_HI_LO[0])), add(lm, mul(e, k(LN2_HI_LO[1]))))
    doc = "x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)): "
    doc += "e + log(1 + f) log2(e)" if base2 else "e ln2 + log(1 + f) (ln2 in two parts)"
    return c.function("log2" if base2 else "log", _log_edges("local.get $x", v), doc)


def _log1p() -> Function:
    c = _Code("x")
    x = "local.get $x"
    core = c.let("core", op("v128.and", op("f32x4.ge", x, k(-0.29289322)),
                            op("f32x4.le", x, k(0.41421356))))
    u = c.let("u", add(k(1.0), x))
    e, fu = _log_parts(c, u, subnormal=False)
    corr = c.let("corr", sel(core, k(0.0), div(sub(x, sub(u, k(1.0))), u)))
    f = c.let("f", sel(core, x, fu))
    e = c.let("e", sel(core, k(0.0), e))
    lm = c.let("lm", _log1p_poly(c, f))
    v = add(mul(e, k(LN2_HI_LO[0])), add(lm, add(mul(e, k(LN2_HI_LO[1])), corr)))
    return c.function("log1p", _log_edges(x, sel(core, lm, v), -1.0),
                      "log(1 + x): on [sqrt(1/2) - 1, sqrt(2) - 1] log's polynomial on x "
                      "itself; else u = 1 + x reduced as in log, plus (x - (u - 1)) / u for "
                      "the rounding of u")


# ---- sin, cos, tan ---------------------------------------------------------------------------

def _half(v: str, high: bool, shape: str = "f64x2.promote_low_f32x4") -> str:
    """Lanes 0-1 (or 2-3, where `high`) of float32 `v` as float64."""
    if high:
        v = op("i8x16.shuffle " + " ".join(str(j) for j in [*range(8, 16), *range(8)]), v, v)
    return op(shape, v)


def _join(lo: str, hi: str) -> str:
    """Two float64x2 as four float32 lanes."""
    return op("i8x16.shuffle " + " ".join(str(j) for j in [*range(8), *range(16, 24)]),
              op("f32x4.demote_f64x2_zero", lo), op("f32x4.demote_f64x2_zero", hi))


def _reduce_big(c: _Code, a: str, half: str) -> tuple[str, str]:
    """a * 2/pi = k + f, |f| <= 1/2, for one float64 half of |x|: each TWO_OVER_PI_PIECES
    piece (24 bits) times a is exact in float64, and is taken mod 4 (exactly) before it is
    added, so the parts of a * 2/pi that are multiples of 4 never enter the sum. (k, f pi/2)."""
    d = lambda name, *args: op(f"f64x2.{name}", *args)  # noqa: E731
    acc = c.let(f"acc{half}", kd(0.0))
    for piece in TWO_OVER_PI_PIECES:
        t = c.let("t", d("mul", a, kd(piece)))
        t = d("sub", t, d("mul", d("floor", d("mul", t, kd(0.25))), kd(4.0)))
        acc = c.let(f"acc{half}", d("add", acc, t))
        acc = c.let(f"acc{half}", d("sub", acc, d("mul", d("floor", d("mul", acc, kd(0.25))),
                                                  kd(4.0))))
    kk = c.let(f"kd{half}", d("nearest", acc))
    return kk, d("mul", d("sub", acc, kk), kd(PIO2_F64))


def _reduce(c: _Code, a: str) -> tuple[str, str]:
    """|x| = k pi/2 + r, |r| <= pi/4: Cody-Waite with pi/2 in four parts below BIG_TRIG,
    float64 pieces of 2/pi from there on. (r, k as int32 lanes)."""
    kf = c.let("kf", op("f32x4.nearest", mul(a, k(0.6366197723675814))))
    r = a
    for part in PIO2_PARTS:
        r = c.let("r", sub(r, mul(kf, k(part))))
    q = c.let("q", op("i32x4.trunc_sat_f32x4_s", kf))
    big = c.let("big", op("f32x4.gt", a, k(BIG_TRIG)))
    c.lines.append(f"{big} v128.any_true if")
    k_lo, r_lo = _reduce_big(c, _half(a, False), "lo")
    r_lo = c.let("rlo", r_lo)
    k_hi, r_hi = _reduce_big(c, _half(a, True), "hi")
    r = c.let("r", sel(big, _join(r_lo, r_hi), r))
    q = c.let("q", sel(big, op("i32x4.trunc_sat_f32x4_s", _join(k_lo, k_hi)), q))
    c.lines.append("end")
    return r, q


def _sincos(c: _Code, r: str) -> tuple[str, str]:
    """(sin r, cos r) for |r| <= pi/4: r + r z SIN_S(z) and 1 - z/2 + z^2 COS_C(z), z = r^2
    (fits: relative errors 1.6e-10 and 7.4e-12)."""
    z = c.let("z", mul(r, r))
    s = c.let("s", add(r, mul(mul(r, z), horner(z, SIN_S))))
    co = c.let("co", add(sub(k(1.0), mul(k(0.5), z)), mul(mul(z, z), horner(z, COS_C))))
    return s, co


def _trig(name: str) -> Function:
    c = _Code("x")
    a = c.let("a", op("f32x4.abs", "local.get $x"))
    r, q = _reduce(c, a)
    s, co = _sincos(c, r)
    if name == "cos":
        q = c.let("q", op("i32x4.add", q, ki(1)))
    odd = c.let("odd", op("i32x4.eq", op("v128.and", q, ki(1)), ki(1)))
    if name == "tan":
        v = div(sel(odd, co, s), sel(odd, s, co))
        v = op("v128.xor", v, op("v128.and", odd, ki(SIGN)))
    else:
        flip = op("i32x4.eq", op("v128.and", q, ki(2)), ki(2))
        v = op("v128.xor", sel(odd, co, s), op("v128.and", flip, ki(SIGN)))
    if name != "cos":
        v = op("v128.xor", v, _signbit("local.get $x"))
    v = sel(op("f32x4.eq", a, k(float("inf"))), k(float("nan")), v)
    turn = {"sin": "sin r, cos r, -sin r, -cos r", "cos": "cos r, -sin r, -cos r, sin r",
            "tan": "tan r, -1/tan r"}[name]
    return c.function(name, v, f"|x| = k pi/2 + r (see _reduce), by k mod 4: {turn}; "
                               "odd functions on |x| with x's sign")


# ---- atan, atan2, asin, acos -----------------------------------------------------------------

def _atan() -> Function:
    c = _Code("x")
    a = c.let("a", op("f32x4.abs", "local.get $x"))
    big = c.let("big", op("f32x4.gt", a, k(2.4142135623730951)))
    mid = c.let("mid", op("f32x4.ge", a, k(0.41421356237309503)))
    num = sel(big, k(-1.0), sel(mid, sub(a, k(1.0)), a))
    den = sel(big, a, sel(mid, add(a, k(1.0)), k(1.0)))
    y = c.let("y", div(num, den))
    hi = sel(big, k(PIO2_HI_LO[0]), sel(mid, k(PIO4_HI_LO[0]), k(0.0)))
    lo = sel(big, k(PIO2_HI_LO[1]), sel(mid, k(PIO4_HI_LO[1]), k(0.0)))
    z = c.let("z", mul(y, y))
    v = add(hi, add(y, add(mul(mul(y, z), horner(z, ATAN_P)), lo)))
    return c.function("atan", op("v128.xor", v, _signbit("local.get $x")),
                      "on |x|: below tan(pi/8) atan(y) of y = |x|; to tan(3pi/8) pi/4 + "
                      "atan((|x| - 1) / (|x| + 1)); above pi/2 + atan(-1/|x|); atan(y) = y + "
                      "y z ATAN_P(z), z = y^2 (fit: relative error 6.3e-11); x's sign")


def _atan2() -> Function:
    c = _Code("a", "b")
    ay = c.let("ay", op("f32x4.abs", "local.get $a"))
    ax = c.let("ax", op("f32x4.abs", "local.get $b"))
    ratio = div(ay, ax)
    zeros = op("v128.and", op("f32x4.eq", ay, k(0.0)), op("f32x4.eq", ax, k(0.0)))
    infs = op("v128.and", op("f32x4.eq", ay, k(float("inf"))),
              op("f32x4.eq", ax, k(float("inf"))))
    ratio = sel(zeros, k(0.0), sel(infs, k(1.0), ratio))
    theta = c.let("theta", _call("atan", ratio))
    left = op("i32x4.lt_s", "local.get $b", ki(0))  # b's sign bit: -0 too
    v = sel(left, add(sub(k(PI_HI_LO[0]), theta), k(PI_HI_LO[1])), theta)
    return c.function("atan2", op("v128.or", v, _signbit("local.get $a")),
                      "atan(|a| / |b|) (0 for 0/0, pi/4 for inf/inf), pi minus it where b's "
                      "sign bit is set, with a's sign")


def _asin_acos(name: str) -> Function:
    c = _Code("x")
    x = "local.get $x"
    a = c.let("a", op("f32x4.abs", x))
    small = c.let("small", op("f32x4.le", a, k(0.5)))
    w = c.let("w", mul(sub(k(1.0), a), k(0.5)))
    u = c.let("u", sel(small, a, op("f32x4.sqrt", w)))
    z = c.let("z", sel(small, mul(a, a), w))
    p = c.let("p", add(u, mul(mul(u, z), horner(z, ASIN_P))))
    twice = c.let("twice", add(p, p))
    if name == "asin":
        v = sel(small, p, add(sub(k(PIO2_HI_LO[0]), twice), k(PIO2_HI_LO[1])))
        v = op("v128.or", v, _signbit(x))
        doc = "|x| <= 1/2: asin(|x|); above pi/2 - 2 asin(sqrt((1 - |x|) / 2)); x's sign"
    else:
        signed = op("v128.or", p, _signbit(x))
        v = sel(op("f32x4.lt", x, k(0.0)), add(sub(k(PI_HI_LO[0]), twice), k(PI_HI_LO[1])),
                twice)
        v = sel(small, add(sub(k(PIO2_HI_LO[0]), signed), k(PIO2_HI_LO[1])), v)
        doc = ("|x| <= 1/2: pi/2 - asin(x); above 2 asin(sqrt((1 - |x|) / 2)), from pi for "
               "x < 0")
    return c.function(name, v, doc + "; asin(u) = u + u z ASIN_P(z), z = u^2, u in [0, 1/2] "
                               "(fit: relative error 2.9e-10)")


# ---- sinh, cosh, tanh, asinh, acosh, atanh ---------------------------------------------------

def _exp_big(c: _Code, a: str) -> tuple[str, str]:
    """(e^a for a <= 88, else e^(a - 88) times e^88/2, as a mask of which)."""
    huge = c.let("huge", op("f32x4.gt", a, k(88.0)))
    return c.let("ea", _call("exp", sel(huge, sub(a, k(88.0)), a))), huge


def _sinh_cosh(name: str) -> Function:
    c = _Code("x")
    a = c.let("a", op("f32x4.abs", "local.get $x"))
    e, huge = _exp_big(c, a)
    half_e = mul(k(0.5), e)
    half_inverse = div(k(0.5), e)
    big = mul(e, k(E88_HALF))
    if name == "cosh":
        return c.function(name, sel(huge, big, add(half_e, half_inverse)),
                          "(e^|x| + e^-|x|) / 2; from 88 on e^(|x| - 88) e^88 / 2")
    z = c.let("z", mul(a, a))
    small = add(a, mul(mul(a, z), horner(z, SINH_P)))
    v = sel(op("f32x4.lt", a, k(1.0)), small, sel(huge, big, sub(half_e, half_inverse)))
    return c.function(name, op("v128.or", v, _signbit("local.get $x")),
                      "|x| < 1: |x| + |x| z SINH_P(z), z = x^2 (fit: relative error 1.5e-10); "
                      "else (e^|x| - e^-|x|) / 2, from 88 on e^(|x| - 88) e^88 / 2; x's sign")


def _tanh() -> Function:
    c = _Code("x")
    a = op("f32x4.min", op("f32x4.abs", "local.get $x"), k(10.0))
    e = c.let("em", _call("expm1", add(a, a)))
    return c.function("tanh", op("v128.or", div(e, add(e, k(2.0))), _signbit("local.get $x")),
                      "on |x| (at most 10, where tanh rounds to 1): t / (t + 2), t = "
                      "expm1(2|x|); x's sign")


def _asinh() -> Function:
    c = _Code("x")
    a = c.let("a", op("f32x4.abs", "local.get $x"))
    huge = c.let("huge", op("f32x4.gt", a, k(2.0**24)))
    s = c.let("s", mul(a, a))
    arg = add(a, div(s, add(k(1.0), op("f32x4.sqrt", add(k(1.0), s)))))
    v = add(_call("log1p", sel(huge, a, arg)), sel(huge, k(LN2), k(0.0)))
    return c.function("asinh", op("v128.or", v, _signbit("local.get $x")),
                      "on |x|: log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); above 2^24 "
                      "log1p(|x|) + ln2; x's sign")


def _acosh() -> Function:
    c = _Code("x")
    x = "local.get $x"
    huge = c.let("huge", op("f32x4.gt", x, k(2.0**24)))
    t = c.let("t", sub(x, k(1.0)))
    arg = add(t, op("f32x4.sqrt", mul(t, add(x, k(1.0)))))
    v = add(_call("log1p", sel(huge, x, arg)), sel(huge, k(LN2), k(0.0)))
    return c.function("acosh", sel(op("f32x4.ge", x, k(1.0)), v, k(float("nan"))),
                      "log1p(t + sqrt(t (x + 1))), t = x - 1; above 2^24 log1p(x) + ln2; NaN "
                      "below 1")


def _atanh() -> Function:
    c = _Code("x")
    a = c.let("a", op("f32x4.abs", "local.get $x"))
    v = mul(k(0.5), _call("log1p", div(add(a, a), sub(k(1.0), a))))
    return c.function("atanh", op("v128.or", v, _signbit("local.get $x")),
                      "log1p(2|x| / (1 - |x|)) / 2 (inf at 1, NaN beyond); x's sign")


# ---- erf, pow -------------------------------------------------------------------------------

def _erf() -> Function:
    c = _Code("x")
    a = c.let("a", op("f32x4.abs", "local.get $x"))
    z = c.let("z", mul(a, a))
    small = add(a, mul(a, horner(z, ERF_E)))
    t = c.let("t", div(k(1.0), a))
    tail = sub(k(1.0), mul(_call("exp", op("f32x4.neg", z)), horner(t, ERFC_R)))
    v = sel(op("f32x4.lt", a, k(1.0)), small,
            sel(op("f32x4.ge", a, k(4.0)), k(1.0), tail))
    return c.function("erf", op("v128.or", v, _signbit("local.get $x")),
                      "on |x|: below 1 |x| + |x| ERF_E(x^2) (fit: relative error 9.7e-10); "
                      "to 4 1 - e^-x^2 ERFC_R(1/|x|) (fit: erf's error 3.6e-11); then 1; "
                      "x's sign")


def _pow_half(c: _Code, e: str, f: str, b: str, high: bool) -> str:
    """2^(b log2 |a|) in float64 for one half of the lanes, from |a| = 2^e (1 + f)."""
    d = lambda name, *args: op(f"f64x2.{name}", *args)  # noqa: E731
    fd = c.let("fd", _half(f, high))
    t = c.let("td", d("div", d("add", fd, fd), d("add", fd, kd(2.0))))
    z = c.let("zd", d("mul", d("mul", t, t), kd(0.25)))
    lm = d("add", t, d("mul", d("mul", t, z), horner(z, POW_LOG_Q, "f64x2")))
    y = d("mul", _half(b, high), d("add", _half(e, high), d("mul", lm, kd(LOG2E_F64))))
    y = c.let("yd", d("min", d("max", y, kd(-300.0)), kd(300.0)))
    kk = c.let("kk", d("nearest", y))
    g = c.let("g", d("sub", y, kk))
    p = d("add", kd(1.0), d("mul", g, horner(g, POW_EXP2_Q, "f64x2")))
    # 2^k: k + 1.5 * 2^52 holds k in its low bits, shifted into the exponent field
    two = op("i64x2.add", op("i64x2.shl", d("add", kk, kd(6755399441055744.0)), "i32.const 52"),
             "v128.const i64x2 4607182418800017408 4607182418800017408")
    return d("mul", p, two)


def _pow() -> Function:
    c = _Code("a", "b")
    a, b = "local.get $a", "local.get $b"
    ax = c.let("ax", op("f32x4.abs", a))
    e, f = _log_parts(c, ax)
    lo = c.let("plo", _pow_half(c, e, f, b, False))
    v = c.let("v", _join(lo, _pow_half(c, e, f, b, True)))
    half = c.let("half", mul(b, k(0.5)))
    integer = c.let("integer", op("f32x4.eq", op("f32x4.nearest", b), b))
    odd = op("v128.and", integer, op("f32x4.ne", op("f32x4.nearest", half), half))
    negate = c.let("negate", op("v128.and", odd, op("i32x4.lt_s", a, ki(0))))
    v = c.let("v", op("v128.xor", v, op("v128.and", negate, ki(SIGN))))
    v = c.let("v", sel(op("v128.andnot", op("f32x4.lt", a, k(0.0)), integer),
                       k(float("nan")), v))
    # 0 and inf are reciprocal: |result| is inf or 0, a's sign kept for odd b
    zero = op("f32x4.eq", ax, k(0.0))
    edge = op("v128.or", zero, op("f32x4.eq", ax, k(float("inf"))))
    mag = sel(op("i32x4.eq", zero, op("f32x4.lt", b, k(0.0))), k(float("inf")), k(0.0))
    v = c.let("v", sel(edge, op("v128.xor", mag, op("v128.and", negate, ki(SIGN))), v))
    above = op("i32x4.eq", op("f32x4.gt", ax, k(1.0)), op("f32x4.gt", b, k(0.0)))
    at_inf = sel(op("f32x4.eq", ax, k(1.0)), k(1.0), sel(above, k(float("inf")), k(0.0)))
    v = c.let("v", sel(op("f32x4.eq", op("f32x4.abs", b), k(float("inf"))), at_inf, v))
    nan = op("v128.or", op("f32x4.ne", a, a), op("f32x4.ne", b, b))
    v = c.let("v", sel(nan, k(float("nan")), v))
    one = op("v128.or", op("f32x4.eq", b, k(0.0)), op("f32x4.eq", a, k(1.0)))
    return c.function("pow", sel(one, k(1.0), v),
                      "C99 pow: 2^(b log2|a|) in float64 (log: |a| = 2^e (1 + f), "
                      "log(1 + f) = t (1 + z POW_LOG_Q(z)) as in log; 2^y = 2^k (1 + g "
                      "POW_EXP2_Q(g)), |g| <= 1/2), one rounding to float32; then the sign "
                      "for odd b, NaN for a < 0 and b not an integer, and the special cases")


# ---- the library ---------------------------------------------------------------------------

def _build() -> dict[str, Function]:
    return {"exp": _exp(), "exp2": _exp2(), "expm1": _expm1(), "log": _log(False),
           "log2": _log(True), "log1p": _log1p(), "sin": _trig("sin"), "cos": _trig("cos"),
           "tan": _trig("tan"), "asin": _asin_acos("asin"), "acos": _asin_acos("acos"),
           "atan": _atan(), "sinh": _sinh_cosh("sinh"), "cosh": _sinh_cosh("cosh"),
           "tanh": _tanh(), "asinh": _asinh(), "acosh": _acosh(), "atanh": _atanh(),
           "erf": _erf(), "atan2": _atan2(), "pow": _pow()}


#: the math functions by op name ("exp", ..., "atan2", "pow")
FUNCTIONS: dict[str, Function] = _build()
_BY_NAME = {f.name: f for f in FUNCTIONS.values()}
_CALL = re.compile(r"\bcall \$(\w+)")


def needed(names: Iterable[str]) -> list[Function]:
    """The functions of ops `names` and every function they call, each once (callees
    first), for a kernel module to include."""
    out: dict[str, Function] = {}

    def visit(function: Function) -> None:
        if function.name in out:
            return
        for callee in _CALL.findall(function.body):
            visit(_BY_NAME[callee])
        out[function.name] = function

    for name in names:
        visit(FUNCTIONS[name])
    return list(out.values())
