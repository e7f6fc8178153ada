"""The wasm backend's division, remainder, power and shift functions, on four lanes at a
time: ``(param $a v128) (param $b v128) (result v128)``, not exported (a kernel module
includes the `needed` ones and calls them), named ``<op>_f32x4`` on float32 lanes and
``<op>_i32x4`` on int32 lanes (which also carry uint8 and bool operands widened to 0..255).

Each gives, lane by lane and bit for bit, what pyburn's op table's scalar function gives:

* float32 (``floor_divide``, ``remainder``, ``fmod``): the op's ``safe`` function computed
  in float64 on the float32 operands and rounded to float32, edge cases included (signed
  zeros, infinities, NaN, division by zero, quotients beyond 2^127). Each lane is worked in
  scalar code: the exact C ``fmod`` of two float32 values (their significands as integers,
  reduced 39 bits of the exponent difference at a time by ``i64.rem_u``), then Python's
  ``//`` and ``%`` from it, step by step in float64 as CPython's float_divmod does.
* int32 (``floor_divide``, ``remainder``, ``fmod``, ``pow``, ``left_shift``,
  ``right_shift``): the op's ``py_int`` (or ``py``) function on the int32 values, wrapped to
  int32: a division by 0 gives 0, INT_MIN // -1 wraps to INT_MIN, ``pow`` keeps the low 32
  bits of the exact power (and for a negative exponent gives 1 at 1, +-1 at -1 and else 0),
  a left shift by b outside 0..31 gives 0, a right shift by b outside 0..31 gives 0 or -1
  (a's sign). Division and shifts work lane by lane in scalar code (SIMD has neither a
  division nor a shift by a different amount per lane); ``pow`` is SIMD square and multiply.

`FUNCTIONS` holds the lane functions by name; they call scalar helpers (``*_lane`` and
``fmod_exact``), which `needed` includes before them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .assemble import Function

_V = (("a", "v128"), ("b", "v128"))


def _per_lane(shape: str, scalar: str, pre: str = "") -> str:
    """A v128 body: lane by lane, `scalar` (which takes that lane of $a and of $b and leaves
    one lane) replaces that lane of $a; `pre` sets locals first."""
    lines = [pre] if pre else []
    lines.append("local.get $a")
    for lane in range(4):
        lines.append(f"local.get $a {shape}.extract_lane {lane} local.get $b "
                     f"{shape}.extract_lane {lane} {scalar} {shape}.replace_lane {lane}")
    return "\n".join(lines)


def _vector(name: str, body: str, doc: str, locals_: tuple[tuple[str, str], ...] = ()
            ) -> Function:
    return Function(name, _V, f";; {doc}\n{body}", results=("v128",), locals=locals_,
                    export=False)


# ---- float32 ------------------------------------------------------------------------------

def _fmod_exact() -> Function:
    """C's fmod(a, b) of two float32 values, exactly, as a float64 (which is a float32
    value): NaN where a is infinite or NaN or b is 0 or NaN, a where |a| < |b| (b infinite
    too), else |a| mod |b| with a's sign."""
    parts = []
    for o in "ab":
        parts.append(f"""
            local.get $u{o} i32.const 23 i32.shr_u local.set $e{o}
            local.get $u{o} i32.const 0x7fffff i32.and i64.extend_i32_u local.set $m{o}
            local.get $e{o} if
              local.get $m{o} i64.const 0x800000 i64.or local.set $m{o}
            else
              i32.const 1 local.set $e{o}
            end""")
    body = f"""
        ;; a = ma 2^(ea - 150) and b = mb 2^(eb - 150), ma and mb integers below 2^24
        local.get $a i32.reinterpret_f32 i32.const 0x7fffffff i32.and local.set $ua
        local.get $b i32.reinterpret_f32 i32.const 0x7fffffff i32.and local.set $ub
        local.get $ua i32.const 0x7f800000 i32.ge_u
        local.get $ub i32.const 0x7f800000 i32.gt_u i32.or
        local.get $ub i32.eqz i32.or
        if f64.const nan return end
        local.get $ua local.get $ub i32.lt_u
        if local.get $a f64.promote_f32 return end
        {parts[0]}
        {parts[1]}
        ;; |a| mod |b| = 2^(eb - 150) ((ma 2^d) mod mb), d = ea - eb, shifting r < 2^24 left
        ;; by at most 39 bits at a time (so that it stays below 2^63)
        local.get $ma local.get $mb i64.rem_u local.set $r
        local.get $ea local.get $eb i32.sub local.set $d
        block $done loop $more
          local.get $d i32.eqz br_if $done
          local.get $d i32.const 39 local.get $d i32.const 39 i32.lt_u select local.set $s
          local.get $r local.get $s i64.extend_i32_u i64.shl local.get $mb i64.rem_u
          local.set $r
          local.get $d local.get $s i32.sub local.set $d
          br $more
        end end
        ;; r 2^(eb - 150), exact; 2^(eb - 150) has the float64 exponent field eb + 873
        local.get $r f64.convert_i64_u
        local.get $eb i32.const 873 i32.add i64.extend_i32_u i64.const 52 i64.shl
        f64.reinterpret_i64 f64.mul
        local.get $a f64.promote_f32 f64.copysign"""
    locals_ = (*((n, "i32") for n in ("ua", "ub", "ea", "eb", "d", "s")),
               *((n, "i64") for n in ("ma", "mb", "r")))
    return Function("fmod_exact", (("a", "f32"), ("b", "f32")), body, results=("f64",),
                    locals=locals_, export=False)


def _floor_divide_f32_lane() -> Function:
    body = """
        ;; _floordiv: a / b where b is 0 (NaN for 0 / 0 and NaN / 0, else a signed inf)
        local.get $b f32.const 0 f32.eq
        if local.get $a local.get $b f32.div return end
        ;; else Python's float a // b: div = (a - mod) / b, mod = fmod(a, b), one less where
        ;; mod is not 0 and its sign is not b's; then snapped to the nearest integer
        local.get $a f64.promote_f32 local.set $x
        local.get $b f64.promote_f32 local.set $w
        local.get $x local.get $a local.get $b call $fmod_exact local.tee $mod f64.sub
        local.get $w f64.div local.set $div
        local.get $mod f64.const 0 f64.ne
        local.get $w f64.const 0 f64.lt local.get $mod f64.const 0 f64.lt i32.ne i32.and
        if local.get $div f64.const 1 f64.sub local.set $div end
        local.get $div f64.const 0 f64.ne
        if
          local.get $div f64.floor local.set $q
          local.get $div local.get $q f64.sub f64.const 0.5 f64.gt
          if local.get $q f64.const 1 f64.add local.set $q end
        else
          ;; a zero quotient has the sign of a / b
          f64.const 0 local.get $x local.get $w f64.div f64.copysign local.set $q
        end
        local.get $q f32.demote_f64"""
    return Function("floor_divide_f32_lane", (("a", "f32"), ("b", "f32")), body,
                    results=("f32",), locals=tuple((n, "f64") for n in ("x", "w", "mod", "div",
                                                                        "q")),
                    export=False)


def _remainder_f32_lane() -> Function:
    body = """
        ;; _remainder: NaN where b is 0, a or b is NaN or a is infinite
        local.get $b f32.const 0 f32.eq
        local.get $a local.get $a f32.ne i32.or
        local.get $b local.get $b f32.ne i32.or
        local.get $a f32.abs f32.const inf f32.eq i32.or
        if f32.const nan return end
        ;; b infinite: a if (a >= 0) == (b > 0) or a == 0, else b
        local.get $b f32.abs f32.const inf f32.eq
        if
          local.get $a local.get $b
          local.get $a f32.const 0 f32.ge local.get $b f32.const 0 f32.gt i32.eq
          local.get $a f32.const 0 f32.eq i32.or
          select return
        end
        ;; else Python's float a % b: mod = fmod(a, b), plus b where it is not 0 and its
        ;; sign is not b's; a zero mod has b's sign
        local.get $a local.get $b call $fmod_exact local.tee $mod f64.const 0 f64.eq
        if f32.const 0 local.get $b f32.copysign return end
        local.get $b f32.const 0 f32.lt local.get $mod f64.const 0 f64.lt i32.ne
        if local.get $mod local.get $b f64.promote_f32 f64.add local.set $mod end
        local.get $mod f32.demote_f64"""
    return Function("remainder_f32_lane", (("a", "f32"), ("b", "f32")), body,
                    results=("f32",), locals=(("mod", "f64"),), export=False)


# ---- int32 --------------------------------------------------------------------------------

def _floor_divide_i32_lane() -> Function:
    body = """
        ;; _int_floordiv: 0 where b is 0; a // -1 is -a, wrapping (INT_MIN stays INT_MIN)
        local.get $b i32.eqz if i32.const 0 return end
        local.get $b i32.const -1 i32.eq if i32.const 0 local.get $a i32.sub return end
        ;; the truncated quotient, one less where the remainder's sign is not b's
        local.get $a local.get $b i32.rem_s local.set $r
        local.get $a local.get $b i32.div_s
        local.get $r i32.const 0 i32.ne
        local.get $r local.get $b i32.xor i32.const 0 i32.lt_s i32.and
        i32.sub"""
    return Function("floor_divide_i32_lane", (("a", "i32"), ("b", "i32")), body,
                    results=("i32",), locals=(("r", "i32"),), export=False)


def _remainder_i32_lane() -> Function:
    body = """
        ;; _int_remainder: 0 where b is 0, else the truncated remainder, plus b where its
        ;; sign is not b's (INT_MIN rem_s -1 is 0)
        local.get $b i32.eqz if i32.const 0 return end
        local.get $a local.get $b i32.rem_s local.tee $r
        local.get $b i32.const 0
        local.get $r i32.const 0 i32.ne
        local.get $r local.get $b i32.xor i32.const 0 i32.lt_s i32.and
        select i32.add"""
    return Function("remainder_i32_lane", (("a", "i32"), ("b", "i32")), body,
                    results=("i32",), locals=(("r", "i32"),), export=False)


def _pow_i32x4() -> Function:
    body = """
        ;; a negative b counts as b & 1 (right for a = 1 and a = -1; other a give 0 below)
        local.get $b v128.const i32x4 1 1 1 1 v128.and local.get $b
        local.get $b v128.const i32x4 0 0 0 0 i32x4.lt_s local.tee $neg
        v128.bitselect local.set $e
        local.get $a local.set $base
        v128.const i32x4 1 1 1 1 local.set $r
        ;; square and multiply, wrapping: r = a^e mod 2^32
        block $done loop $more
          local.get $e v128.any_true i32.eqz br_if $done
          local.get $r local.get $base i32x4.mul local.get $r
          local.get $e v128.const i32x4 1 1 1 1 v128.and v128.const i32x4 1 1 1 1 i32x4.eq
          v128.bitselect local.set $r
          local.get $base local.get $base i32x4.mul local.set $base
          local.get $e i32.const 1 i32x4.shr_u local.set $e
          br $more
        end end
        ;; 0 where b < 0 and a is neither 1 nor -1
        local.get $r
        local.get $neg
        local.get $a v128.const i32x4 1 1 1 1 i32x4.ne v128.and
        local.get $a v128.const i32x4 -1 -1 -1 -1 i32x4.ne v128.and
        v128.andnot"""
    return _vector("pow_i32x4", body, "_int_pow wrapped to int32: the low 32 bits of a^b for "
                   "b >= 0; for b < 0 1 at a = 1, (-1)^b at a = -1, else 0",
                   tuple((n, "v128") for n in ("neg", "e", "base", "r")))


def _build() -> tuple[dict[str, Function], dict[str, Function]]:
    helpers = [_fmod_exact(), _floor_divide_f32_lane(), _remainder_f32_lane(),
               _floor_divide_i32_lane(), _remainder_i32_lane()]
    fns = [
        _vector("floor_divide_f32x4", _per_lane("f32x4", "call $floor_divide_f32_lane"),
                "Python's float a // b (_floordiv) in float64, rounded to float32"),
        _vector("remainder_f32x4", _per_lane("f32x4", "call $remainder_f32_lane"),
                "Python's float a % b (_remainder) in float64, rounded to float32"),
        _vector("fmod_f32x4", _per_lane("f32x4", "call $fmod_exact f32.demote_f64"),
                "math.fmod(a, b) (_fmod), exact"),
        _vector("floor_divide_i32x4", _per_lane("i32x4", "call $floor_divide_i32_lane"),
                "_int_floordiv wrapped to int32"),
        _vector("remainder_i32x4", _per_lane("i32x4", "call $remainder_i32_lane"),
                "_int_remainder wrapped to int32"),
        _vector("fmod_i32x4", _per_lane(
            "i32x4", "i32.rem_s",
            pre="local.get $b local.get $b v128.const i32x4 0 0 0 0 i32x4.eq "
                "v128.const i32x4 1 1 1 1 v128.and v128.or local.set $b"),
                "_int_fmod: the truncated remainder, sign of a (a rem_s 1 = 0 where b is "
                "0, so b is 1 there)"),
        _pow_i32x4(),
        _vector("left_shift_i32x4", _per_lane("i32x4", "i32.shl") +
                "\nlocal.get $b v128.const i32x4 32 32 32 32 i32x4.lt_u v128.and",
                "_left_shift wrapped to int32: a << b for b in 0..31, else 0 (b >= 32 "
                "leaves no low bit; b < 0 is above 31 unsigned)"),
        _vector("right_shift_i32x4", _per_lane(
            "i32x4", "i32.shr_s", pre="local.get $b v128.const i32x4 31 31 31 31 i32x4.min_u "
                                      "local.set $b"),
                "_right_shift: a >> b for b in 0..31, else a >> 31 (0 or -1: b >= 32, or "
                "b < 0, which is above 31 unsigned)"),
    ]
    return {f.name: f for f in fns}, {f.name: f for f in helpers}


#: the lane functions by name ("floor_divide_f32x4", ..., "right_shift_i32x4")
FUNCTIONS, _HELPERS = _build()
_CALL = re.compile(r"\bcall \$(\w+)")


def needed(names: Iterable[str]) -> list[Function]:
    """The functions `names` (keys of `FUNCTIONS`) and every function they call, each once
    (callees first), for a kernel module to include."""
    every = {**_HELPERS, **FUNCTIONS}
    out: dict[str, Function] = {}

    def visit(function: Function) -> None:
        if function.name in out:
            return
        for callee in _CALL.findall(function.body):
            visit(every[callee])
        out[function.name] = function

    for name in names:
        visit(FUNCTIONS[name])
    return list(out.values())
