"""The one table of elementwise primitives.

Each entry says, once, what an elementwise op computes: its arity, which dtypes it accepts
and what dtype it returns, a pure-Python scalar function (used by the flex backend), the
numpy function that computes it (used by the cpu backend). Later layers add their columns
here (the autodiff backward rule, the WGSL expression). A new elementwise op is one entry.

Scalar functions come in two flavours: ``py`` is the fast one and may raise an
``ArithmeticError`` or ``ValueError`` on an edge case (``math.log(0.0)``); ``safe`` gives the
IEEE-754 answer for every input and is only called when ``py`` raised somewhere in a batch.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

INF = math.inf
NAN = math.nan

# An op's `domain`: what inputs it accepts and what it returns:
#   "float"     inputs are cast to a float dtype first; result has that dtype
#   "numeric"   int or float (bool inputs become int32); result has the input dtype
#   "rounding"  like "numeric", but the identity on integers
#   "compare"   any dtype; result is bool
#   "logical"   any dtype, read as truth values; result is bool
#   "bitwise"   integers and bool only; result has the input dtype


@dataclass(frozen=True)
class ElementwiseOp:
    """What one elementwise primitive computes."""

    name: str
    arity: int
    domain: str
    py: Callable
    numpy: str  # a numpy function's name; a trailing "_" names one the cpu backend supplies
    doc: str
    safe: Callable | None = None  # IEEE-correct scalar function, when `py` can raise
    py_int: Callable | None = None  # scalar function for integer inputs, when it differs
    # backward rule on tensors: (grad, *inputs) -> input grad (unary) or grads (binary);
    # None for ops whose gradient is zero or undefined
    grad: Callable | None = None
    # WGSL expression of the op on `x` (unary) or `a` and `b` (binary), in the compute type
    # {{T}} (f32, i32 or u32, see pyburn/backends/wgpu/kinds.py); `pb_` names are helpers of
    # pyburn/shaders/functions.wgsl. Compare and logical ops give a WGSL bool.
    wgsl: str = ""
    # WebAssembly (the wasm backend's kernels): flat WebAssembly text computing the op on
    # four lanes at once, from the v128 locals `$x` (unary) or `$a` and `$b` (binary) onto
    # the stack, in lanes {{L}} (f32x4 for float32, i32x4 for the integer dtypes and bool,
    # which the kernels widen to 32 bits); `$..._f32x4` calls are pyburn/backends/wasm/
    # mathlib.py's. Compare and logical ops give a lane mask (all ones where true).
    wasm: str = ""
    # the WebAssembly on integer (and bool) inputs, where it differs from `wasm`'s
    wasm_int: str | None = None
    # the ONNX form: an operator's name where one is this op ("Exp", "Add"), else a call
    # expression over the operands `x` (unary) or `a` and `b` (binary) and numbers (in the
    # inputs' dtype), with attributes as keywords ("Mod(a, b, fmod=1)"); None where ONNX has
    # no exact form (the exporter refuses the op)
    onnx: str | None = None
    # the ONNX form on integer inputs, where it differs from `onnx`'s
    onnx_int: str | None = None
    # the op the tensor layer calls instead on bool inputs (~ on bool is logical not, as in
    # numpy and PyTorch, not Python's ~True == -2; & on bools is logical and), so no backend
    # and no exporter sees this op on bool
    on_bool: str | None = None

    @property
    def rule(self) -> str:
        """The key of this op's backward rule in ``pyburn.autodiff.rules.RULES``."""
        return f"{'unary' if self.arity == 1 else 'binary'}:{self.name}"

    @property
    def returns_bool(self) -> bool:
        """Whether the result is a bool tensor whatever the inputs."""
        return self.domain in ("compare", "logical")


def _guard(fn: Callable, on_error: Callable) -> Callable:
    """Wrap `fn` so that an ArithmeticError/ValueError yields `on_error(*args)` instead."""

    def safe(*args):
        try:
            return fn(*args)
        except (ArithmeticError, ValueError):
            return on_error(*args)

    return safe


def _log_edge(x: float) -> float:
    return -INF if x == 0 else NAN


def _exp_edge(x: float) -> float:
    return INF if x > 0 else (0.0 if x < 0 else x)


def _div(a: float, b: float) -> float:
    if b == 0:
        if a != a or a == 0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def _floordiv(a: float, b: float) -> float:
    return _div(a, b) if b == 0 else float(a // b)


def _remainder(a: float, b: float) -> float:
    if b == 0 or a != a or b != b or math.isinf(a):
        return NAN
    if math.isinf(b):
        return a if (a >= 0) == (b > 0) or a == 0 else b
    return a % b


def _fmod(a: float, b: float) -> float:
    return NAN if b == 0 or math.isinf(a) or a != a or b != b else math.fmod(a, b)


def _pow(a: float, b: float) -> float:
    try:
        return math.pow(a, b)
    except OverflowError:
        return INF if a > 0 or float(b).is_integer() and int(b) % 2 == 0 else -INF
    except (ValueError, ZeroDivisionError):
        if a == 0:
            return math.copysign(INF, a) if float(b).is_integer() and int(b) % 2 else INF
        return NAN


def _int_pow(a: int, b: int) -> int:
    if b < 0:
        return 1 if a == 1 else ((-1) ** (-b) if a == -1 else 0)
    return pow(a, b, 1 << 64)  # the low 64 bits: what every integer dtype keeps after wrapping


def _int_floordiv(a: int, b: int) -> int:
    return a // b if b else 0


def _int_remainder(a: int, b: int) -> int:
    return a % b if b else 0


def _int_fmod(a: int, b: int) -> int:
    if not b:
        return 0
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _left_shift(a: int, b: int) -> int:
    return a << b if 0 <= b < 64 else 0


def _right_shift(a: int, b: int) -> int:
    return a >> b if 0 <= b < 64 else (0 if a >= 0 else -1)


def _sign(x):
    return x if x != x else (x > 0) - (x < 0)


def _minimum(a, b):
    return a if a <= b or a != a else b


def _relu(x):
    return 0.0 if x <= 0 else x  # NaN <= 0 is false: NaN stays NaN


def _maximum(a, b):
    return a if a >= b or a != a else b


def _rounding(fn: Callable) -> Callable:
    def apply(x: float) -> float:
        return float(fn(x)) if math.isfinite(x) else x

    return apply


def _safe_rsqrt(x: float) -> float:
    if x == 0:
        return math.copysign(INF, x)
    return 1.0 / math.sqrt(x) if x > 0 else (0.0 if x == INF else NAN)


# ---- helpers of the backward rules ----------------------------------------------------------
LN2 = math.log(2.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _tie_share(g, a, b, a_wins):
    """Gradient for minimum/maximum: the winner takes it, ties split it evenly."""
    win = a_wins.cast(g.dtype)
    tie = (a == b).cast(g.dtype) * 0.5
    return g * (win + tie), g * (1.0 - win - tie)


def _pow_grads(g, a, b):
    exponent_grad = g * a.pow(b) * a.log().where(a != 0, 0.0)  # 0 ** b: no log term
    return g * b * a.pow(b - 1.0), exponent_grad


# ---- the tables: one record per op, every column in it -------------------------------------
# `grad` is the backward rule in tensor code (gradients of gradients work). `wgsl`: plain
# builtins where they are IEEE-correct; `pb_` helpers where a GPU compiler may drop NaN
# checks, where WGSL leaves a case undefined (integer division by zero; exp and log of NaN,
# infinities, zero or negative numbers), or where a builtin loses accuracy (near zero: expm1,
# log1p, sinh, tanh, ...; sin, cos and tan everywhere in Chrome).
#: atan2(a, b) in ONNX operators (it has none of its own): atan(a / b), moved by pi into the
#: left half-plane, and +-pi/2 or 0 on the vertical axis (signed zeros are not told apart)
_ATAN2_ONNX = (f"Where(Less(b, 0), Add(Atan(Div(a, b)), Where(Less(a, 0), {-math.pi!r}, "
               f"{math.pi!r})), Where(Equal(b, 0), Mul(Sign(a), {math.pi / 2!r}), "
               "Atan(Div(a, b))))")

_E = ElementwiseOp  # short, for the tables below
UNARY: dict[str, ElementwiseOp] = {op.name: op for op in (
    _E("neg", 1, "numeric", operator.neg, "negative", "Negation, -x.",
       grad=lambda g, x: -g,
       wasm="local.get $x {{L}}.neg",
       wgsl="pb_neg_{{T}}(x)", onnx="Neg"),
    _E("abs", 1, "numeric", abs, "absolute", "Absolute value |x|.",
       grad=lambda g, x: g * x.sign(),
       wasm="local.get $x {{L}}.abs",
       wgsl="abs(x)", onnx="Abs"),
    _E("sign", 1, "numeric", _sign, "sign", "-1, 0 or 1 by the sign of x (NaN stays NaN).",
       wasm="local.get $x v128.const f32x4 -1 -1 -1 -1 v128.const f32x4 1 1 1 1 v128.const i32x4 "
       "0 0 0 0 local.get $x v128.const i32x4 0 0 0 0 f32x4.gt v128.bitselect local.get $x "
       "v128.const i32x4 0 0 0 0 f32x4.lt v128.bitselect local.get $x local.get $x f32x4.ne "
       "v128.bitselect",
       wasm_int="v128.const i32x4 -1 -1 -1 -1 v128.const i32x4 1 1 1 1 v128.const i32x4 0 0 0 0 "
       "local.get $x v128.const i32x4 0 0 0 0 i32x4.gt_s v128.bitselect local.get $x v128.const "
       "i32x4 0 0 0 0 i32x4.lt_s v128.bitselect",
       wgsl="pb_sign_{{T}}(x)", onnx="Sign"),
    _E("relu", 1, "numeric", _relu, "relu_", "max(x, 0): 0 for x <= 0 (also -0), NaN stays NaN.",
       py_int=lambda x: x if x > 0 else 0,
       grad=lambda g, x: g * (x > 0),
       wasm="v128.const i32x4 0 0 0 0 local.get $x local.get $x v128.const i32x4 0 0 0 0 "
       "f32x4.le v128.bitselect",
       wasm_int="local.get $x v128.const i32x4 0 0 0 0 i32x4.max_s",
       wgsl="select(x, {{T}}(0), x <= {{T}}(0))", onnx="Relu"),
    _E("exp", 1, "float", math.exp, "exp", "e to the power x.", _guard(math.exp, _exp_edge),
       grad=lambda g, x: g * x.exp(),
       wasm="local.get $x call $exp_f32x4",
       wgsl="pb_exp(x)", onnx="Exp"),
    _E("exp2", 1, "float", lambda x: 2.0**x, "exp2", "2 to the power x.",
       _guard(lambda x: 2.0**x, _exp_edge),
       grad=lambda g, x: g * x.exp2() * LN2,
       wasm="local.get $x call $exp2_f32x4",
       wgsl="pb_exp2(x)", onnx="Pow(2, x)"),
    _E("expm1", 1, "float", math.expm1, "expm1", "exp(x) - 1, accurate near 0.",
       _guard(math.expm1, lambda x: INF if x > 0 else x),
       grad=lambda g, x: g * x.exp(),
       wasm="local.get $x call $expm1_f32x4",
       wgsl="pb_expm1(x)", onnx="Sub(Exp(x), 1)"),
    _E("log", 1, "float", math.log, "log", "Natural logarithm.", _guard(math.log, _log_edge),
       grad=lambda g, x: g / x,
       wasm="local.get $x call $log_f32x4",
       wgsl="pb_log(x)", onnx="Log"),
    _E("log2", 1, "float", math.log2, "log2", "Base-2 logarithm.", _guard(math.log2, _log_edge),
       grad=lambda g, x: g / (x * LN2),
       wasm="local.get $x call $log2_f32x4",
       wgsl="pb_log2(x)", onnx=f"Div(Log(x), {math.log(2.0)!r})"),
    _E("log1p", 1, "float", math.log1p, "log1p", "log(1 + x), accurate near 0.",
       _guard(math.log1p, lambda x: -INF if x == -1 else NAN),
       grad=lambda g, x: g / (x + 1.0),
       wasm="local.get $x call $log1p_f32x4",
       wgsl="pb_log1p(x)", onnx="Log(Add(x, 1))"),
    _E("sqrt", 1, "float", math.sqrt, "sqrt", "Square root.", _guard(math.sqrt, lambda x: NAN),
       grad=lambda g, x: g / (x.sqrt() * 2.0),
       wasm="local.get $x f32x4.sqrt",
       wgsl="sqrt(x)", onnx="Sqrt"),
    _E("rsqrt", 1, "float", lambda x: 1.0 / math.sqrt(x), "rsqrt_", "1 / sqrt(x).",
       _safe_rsqrt, grad=lambda g, x: g * x.rsqrt() / x * -0.5,
       wasm="v128.const f32x4 1 1 1 1 local.get $x f32x4.sqrt f32x4.div",
       wgsl="1.0 / sqrt(x)",
       onnx="Reciprocal(Sqrt(x))"),
    _E("reciprocal", 1, "float", lambda x: 1.0 / x, "reciprocal", "1 / x.",
       lambda x: _div(1.0, x), grad=lambda g, x: -g / (x * x),
       wasm="v128.const f32x4 1 1 1 1 local.get $x f32x4.div",
       wgsl="1.0 / x", onnx="Reciprocal"),
    _E("sin", 1, "float", math.sin, "sin", "Sine.", _guard(math.sin, lambda x: NAN),
       grad=lambda g, x: g * x.cos(),
       wasm="local.get $x call $sin_f32x4",
       wgsl="pb_sin(x)", onnx="Sin"),
    _E("cos", 1, "float", math.cos, "cos", "Cosine.", _guard(math.cos, lambda x: NAN),
       grad=lambda g, x: -g * x.sin(),
       wasm="local.get $x call $cos_f32x4",
       wgsl="pb_cos(x)", onnx="Cos"),
    _E("tan", 1, "float", math.tan, "tan", "Tangent.", _guard(math.tan, lambda x: NAN),
       grad=lambda g, x: g / (x.cos() * x.cos()),
       wasm="local.get $x call $tan_f32x4",
       wgsl="pb_tan(x)", onnx="Tan"),
    _E("asin", 1, "float", math.asin, "arcsin", "Inverse sine.", _guard(math.asin, lambda x: NAN),
       grad=lambda g, x: g * (1.0 - x * x).rsqrt(),
       wasm="local.get $x call $asin_f32x4",
       wgsl="pb_asin(x)", onnx="Asin"),
    _E("acos", 1, "float", math.acos, "arccos", "Inverse cosine.",
       _guard(math.acos, lambda x: NAN),
       grad=lambda g, x: -g * (1.0 - x * x).rsqrt(),
       wasm="local.get $x call $acos_f32x4",
       wgsl="pb_acos(x)", onnx="Acos"),
    _E("atan", 1, "float", math.atan, "arctan", "Inverse tangent.",
       grad=lambda g, x: g / (x * x + 1.0),
       wasm="local.get $x call $atan_f32x4",
       wgsl="pb_atan(x)", onnx="Atan"),
    _E("sinh", 1, "float", math.sinh, "sinh", "Hyperbolic sine.",
       _guard(math.sinh, lambda x: math.copysign(INF, x)),
       grad=lambda g, x: g * x.cosh(),
       wasm="local.get $x call $sinh_f32x4",
       wgsl="pb_sinh(x)", onnx="Sinh"),
    _E("cosh", 1, "float", math.cosh, "cosh", "Hyperbolic cosine.",
       _guard(math.cosh, lambda x: INF), grad=lambda g, x: g * x.sinh(),
       wasm="local.get $x call $cosh_f32x4",
       wgsl="pb_cosh(x)",
       onnx="Cosh"),
    _E("tanh", 1, "float", math.tanh, "tanh", "Hyperbolic tangent.",
       grad=lambda g, x: g * (1.0 - x.tanh() * x.tanh()),
       wasm="local.get $x call $tanh_f32x4",
       wgsl="pb_tanh(x)", onnx="Tanh"),
    _E("asinh", 1, "float", math.asinh, "arcsinh", "Inverse hyperbolic sine.",
       grad=lambda g, x: g * (x * x + 1.0).rsqrt(),
       wasm="local.get $x call $asinh_f32x4",
       wgsl="pb_asinh(x)", onnx="Asinh"),
    _E("acosh", 1, "float", math.acosh, "arccosh", "Inverse hyperbolic cosine.",
       _guard(math.acosh, lambda x: NAN),
       grad=lambda g, x: g * (x * x - 1.0).rsqrt(),
       wasm="local.get $x call $acosh_f32x4",
       wgsl="pb_acosh(x)", onnx="Acosh"),
    _E("atanh", 1, "float", math.atanh, "arctanh", "Inverse hyperbolic tangent.",
       _guard(math.atanh, lambda x: math.copysign(INF, x) if abs(x) == 1 else NAN),
       grad=lambda g, x: g / (1.0 - x * x),
       wasm="local.get $x call $atanh_f32x4",
       wgsl="pb_atanh(x)", onnx="Atanh"),
    _E("erf", 1, "float", math.erf, "erf_", "The error function.",
       grad=lambda g, x: g * (-(x * x)).exp() * TWO_OVER_SQRT_PI,
       wasm="local.get $x call $erf_f32x4",
       wgsl="pb_erf(x)", onnx="Erf"),
    _E("floor", 1, "rounding", math.floor, "floor", "Largest integer <= x.",
       _rounding(math.floor),
       wasm="local.get $x f32x4.floor",
       wasm_int="local.get $x",
       wgsl="floor(x)", onnx="Floor"),
    _E("ceil", 1, "rounding", math.ceil, "ceil", "Smallest integer >= x.",
       _rounding(math.ceil),
       wasm="local.get $x f32x4.ceil",
       wasm_int="local.get $x",
       wgsl="ceil(x)", onnx="Ceil"),
    _E("round", 1, "rounding", round, "rint", "Nearest integer, ties to even.",
       _rounding(round),
       wasm="local.get $x f32x4.nearest",
       wasm_int="local.get $x",
       wgsl="round(x)", onnx="Round"),
    _E("trunc", 1, "rounding", math.trunc, "trunc", "Integer part, rounding toward zero.",
       _rounding(math.trunc),
       wasm="local.get $x f32x4.trunc",
       wasm_int="local.get $x",
       wgsl="trunc(x)",
       onnx="Where(Less(x, 0), Ceil(x), Floor(x))"),
    _E("isnan", 1, "compare", math.isnan, "isnan", "True where x is NaN.",
       wasm="local.get $x local.get $x f32x4.ne",
       wasm_int="v128.const i32x4 0 0 0 0",
       wgsl="pb_isnan_{{T}}(x)", onnx="IsNaN"),
    _E("isinf", 1, "compare", math.isinf, "isinf", "True where x is +inf or -inf.",
       wasm="local.get $x f32x4.abs v128.const f32x4 inf inf inf inf f32x4.eq",
       wasm_int="v128.const i32x4 0 0 0 0",
       wgsl="pb_isinf_{{T}}(x)", onnx="IsInf"),
    _E("isfinite", 1, "compare", math.isfinite, "isfinite", "True where x is finite.",
       wasm="local.get $x f32x4.abs v128.const f32x4 inf inf inf inf f32x4.lt",
       wasm_int="v128.const i32x4 -1 -1 -1 -1",
       wgsl="pb_isfinite_{{T}}(x)", onnx="Not(Or(IsNaN(x), IsInf(x)))"),
    _E("logical_not", 1, "logical", operator.not_, "logical_not", "Logical not.",
       wasm="local.get $x v128.const i32x4 0 0 0 0 f32x4.eq",
       wasm_int="local.get $x v128.const i32x4 0 0 0 0 i32x4.eq",
       wgsl="!pb_truth_{{T}}(x)", onnx="Not"),
    _E("bitwise_not", 1, "bitwise", operator.invert, "invert", "Bitwise not (~x).",
       on_bool="logical_not",
       wasm="local.get $x v128.not",
       wgsl="~x", onnx="BitwiseNot"),
)}

BINARY: dict[str, ElementwiseOp] = {op.name: op for op in (
    _E("add", 2, "numeric", operator.add, "add", "a + b.",
       grad=lambda g, a, b: (g, g),
       wasm="local.get $a local.get $b {{L}}.add",
       wgsl="a + b", onnx="Add"),
    _E("sub", 2, "numeric", operator.sub, "subtract", "a - b.",
       grad=lambda g, a, b: (g, -g),
       wasm="local.get $a local.get $b {{L}}.sub",
       wgsl="a - b", onnx="Sub"),
    _E("mul", 2, "numeric", operator.mul, "multiply", "a * b.",
       grad=lambda g, a, b: (g * b, g * a),
       wasm="local.get $a local.get $b {{L}}.mul",
       wgsl="a * b", onnx="Mul"),
    _E("div", 2, "float", operator.truediv, "true_divide", "True division a / b.", _div,
       grad=lambda g, a, b: (g / b, -g * a / (b * b)),
       wasm="local.get $a local.get $b f32x4.div",
       wgsl="a / b", onnx="Div"),
    _E("floor_divide", 2, "numeric", lambda a, b: float(a // b), "floor_divide",
       "Division rounded down, a // b.", _floordiv, _int_floordiv,
       wasm="local.get $a local.get $b call $floor_divide_f32x4",
       wasm_int="local.get $a local.get $b call $floor_divide_i32x4",
       wgsl="pb_floordiv_{{T}}(a, b)",
       onnx="Floor(Div(a, b))", onnx_int="Div(Sub(a, Mod(a, b, fmod=0)), b)"),
    _E("remainder", 2, "numeric", operator.mod, "remainder",
       "a - b * floor(a / b): the remainder with the sign of b (Python's %).",
       _remainder, _int_remainder,
       grad=lambda g, a, b: (g, -g * a.floor_divide(b)),
       wasm="local.get $a local.get $b call $remainder_f32x4",
       wasm_int="local.get $a local.get $b call $remainder_i32x4",
       wgsl="pb_remainder_{{T}}(a, b)",
       onnx="Sub(a, Mul(Floor(Div(a, b)), b))", onnx_int="Mod(a, b, fmod=0)"),
    _E("fmod", 2, "numeric", math.fmod, "fmod",
       "C-style remainder with the sign of a.", _fmod, _int_fmod,
       grad=lambda g, a, b: (g, -g * (a / b).trunc()),
       wasm="local.get $a local.get $b call $fmod_f32x4",
       wasm_int="local.get $a local.get $b call $fmod_i32x4",
       wgsl="pb_fmod_{{T}}(a, b)", onnx="Mod(a, b, fmod=1)"),
    _E("pow", 2, "numeric", math.pow, "power", "a to the power b.", _pow, _int_pow,
       grad=_pow_grads,
       wasm="local.get $a local.get $b call $pow_f32x4",
       wasm_int="local.get $a local.get $b call $pow_i32x4",
       wgsl="pb_pow_{{T}}(a, b)", onnx="Pow"),
    _E("atan2", 2, "float", math.atan2, "arctan2", "Angle of the point (b, a) in radians.",
       grad=lambda g, a, b: (g * b / (a * a + b * b), -g * a / (a * a + b * b)),
       wasm="local.get $a local.get $b call $atan2_f32x4",
       wgsl="pb_atan2(a, b)", onnx=_ATAN2_ONNX),
    _E("minimum", 2, "numeric", _minimum, "minimum", "Elementwise minimum (NaN wins).",
       grad=lambda g, a, b: _tie_share(g, a, b, a < b),
       wasm="local.get $a local.get $b local.get $a local.get $b f32x4.le local.get $a local.get "
       "$a f32x4.ne v128.or v128.bitselect",
       wasm_int="local.get $a local.get $b i32x4.min_s",
       wgsl="pb_minimum_{{T}}(a, b)", onnx="Min"),
    _E("maximum", 2, "numeric", _maximum, "maximum", "Elementwise maximum (NaN wins).",
       grad=lambda g, a, b: _tie_share(g, a, b, a > b),
       wasm="local.get $a local.get $b local.get $a local.get $b f32x4.ge local.get $a local.get "
       "$a f32x4.ne v128.or v128.bitselect",
       wasm_int="local.get $a local.get $b i32x4.max_s",
       wgsl="pb_maximum_{{T}}(a, b)", onnx="Max"),
    _E("eq", 2, "compare", operator.eq, "equal", "a == b.",
       wasm="local.get $a local.get $b {{L}}.eq",
       wgsl="pb_ordered_{{T}}(a, b) && a == b", onnx="Equal"),
    _E("ne", 2, "compare", operator.ne, "not_equal", "a != b.",
       wasm="local.get $a local.get $b {{L}}.ne",
       wgsl="!(pb_ordered_{{T}}(a, b) && a == b)", onnx="Not(Equal(a, b))"),
    _E("lt", 2, "compare", operator.lt, "less", "a < b.",
       wasm="local.get $a local.get $b f32x4.lt",
       wasm_int="local.get $a local.get $b i32x4.lt_s",
       wgsl="pb_ordered_{{T}}(a, b) && a < b",
       onnx="Less"),
    _E("le", 2, "compare", operator.le, "less_equal", "a <= b.",
       wasm="local.get $a local.get $b f32x4.le",
       wasm_int="local.get $a local.get $b i32x4.le_s",
       wgsl="pb_ordered_{{T}}(a, b) && a <= b", onnx="LessOrEqual"),
    _E("gt", 2, "compare", operator.gt, "greater", "a > b.",
       wasm="local.get $a local.get $b f32x4.gt",
       wasm_int="local.get $a local.get $b i32x4.gt_s",
       wgsl="pb_ordered_{{T}}(a, b) && a > b", onnx="Greater"),
    _E("ge", 2, "compare", operator.ge, "greater_equal", "a >= b.",
       wasm="local.get $a local.get $b f32x4.ge",
       wasm_int="local.get $a local.get $b i32x4.ge_s",
       wgsl="pb_ordered_{{T}}(a, b) && a >= b", onnx="GreaterOrEqual"),
    _E("logical_and", 2, "logical", lambda a, b: bool(a) and bool(b), "logical_and",
       "Logical and.",
       wasm="local.get $a v128.const i32x4 0 0 0 0 f32x4.ne local.get $b v128.const i32x4 0 0 0 "
       "0 f32x4.ne v128.and",
       wasm_int="local.get $a v128.const i32x4 0 0 0 0 i32x4.ne local.get $b v128.const i32x4 0 "
       "0 0 0 i32x4.ne v128.and",
       wgsl="pb_truth_{{T}}(a) && pb_truth_{{T}}(b)", onnx="And"),
    _E("logical_or", 2, "logical", lambda a, b: bool(a) or bool(b), "logical_or", "Logical or.",
       wasm="local.get $a v128.const i32x4 0 0 0 0 f32x4.ne local.get $b v128.const i32x4 0 0 0 "
       "0 f32x4.ne v128.or",
       wasm_int="local.get $a v128.const i32x4 0 0 0 0 i32x4.ne local.get $b v128.const i32x4 0 "
       "0 0 0 i32x4.ne v128.or",
       wgsl="pb_truth_{{T}}(a) || pb_truth_{{T}}(b)", onnx="Or"),
    _E("logical_xor", 2, "logical", lambda a, b: bool(a) != bool(b), "logical_xor",
       "Logical exclusive or.",
       wasm="local.get $a v128.const i32x4 0 0 0 0 f32x4.ne local.get $b v128.const i32x4 0 0 0 "
       "0 f32x4.ne v128.xor",
       wasm_int="local.get $a v128.const i32x4 0 0 0 0 i32x4.ne local.get $b v128.const i32x4 0 "
       "0 0 0 i32x4.ne v128.xor",
       wgsl="pb_truth_{{T}}(a) != pb_truth_{{T}}(b)", onnx="Xor"),
    _E("bitwise_and", 2, "bitwise", operator.and_, "bitwise_and", "Bitwise and (a & b).",
       on_bool="logical_and",
       wasm="local.get $a local.get $b v128.and",
       wgsl="a & b", onnx="BitwiseAnd"),
    _E("bitwise_or", 2, "bitwise", operator.or_, "bitwise_or", "Bitwise or (a | b).",
       on_bool="logical_or",
       wasm="local.get $a local.get $b v128.or",
       wgsl="a | b", onnx="BitwiseOr"),
    _E("bitwise_xor", 2, "bitwise", operator.xor, "bitwise_xor", "Bitwise xor (a ^ b).",
       on_bool="logical_xor",
       wasm="local.get $a local.get $b v128.xor",
       wgsl="a ^ b", onnx="BitwiseXor"),
    _E("left_shift", 2, "bitwise", _left_shift, "left_shift", "a << b.",
       wasm="local.get $a local.get $b call $left_shift_i32x4",
       wgsl="pb_shl_{{T}}(a, b)"),
    _E("right_shift", 2, "bitwise", _right_shift, "right_shift",
       "Arithmetic right shift a >> b.",
       wasm="local.get $a local.get $b call $right_shift_i32x4",
       wgsl="pb_shr_{{T}}(a, b)"),
)}
