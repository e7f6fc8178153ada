"""Creation kernels: fill, arange, and the Philox-4x32-10 random words of ``pyburn.random``.

- ``fill_1(out, value, n)`` and ``fill_4(out, bits, n)``: `n` elements of one or four bytes,
  each `value` (its low byte) or the 32 bits `bits` (a float32's, an int32's).
- ``arange_f32(out, start, step, n)``: ``start + i * step`` computed in float64 (`start`
  and `step` are f64), then rounded; ``arange_i32(out, start, step, n)``: in int32.
- ``philox(out, n, skip, b0, b1, b2, b3, k0, k1)``: the words of the stream from the one
  `skip` words (0..3) into the block of the 128-bit counter ``b3:b2:b1:b0`` with the key
  ``k1:k0``, `n` of them, one block after another (the counter carries across its words).
  Every argument is an i32 (a JavaScript number can carry no i64).
"""

from __future__ import annotations

from ...random import PHILOX_M0, PHILOX_M1, PHILOX_ROUNDS, PHILOX_W0, PHILOX_W1
from .assemble import Function


def _i32(value: int) -> int:
    """An unsigned 32-bit constant as the signed literal i32.const takes."""
    return value - (1 << 32) if value >= 1 << 31 else value


def fill_kernels() -> list[Function]:
    """``fill_1`` and ``fill_4``."""
    one = Function("fill_1", (("out", "i32"), ("value", "i32"), ("n", "i32")),
                   "local.get $out local.get $value local.get $n memory.fill")
    four = Function("fill_4", (("out", "i32"), ("bits", "i32"), ("n", "i32")), """
        local.get $bits i32x4.splat local.set $v
        local.get $out local.get $n i32.const -4 i32.and i32.const 4 i32.mul i32.add
        local.set $end
        block $v_done loop $vector
          local.get $out local.get $end i32.ge_u br_if $v_done
          local.get $out local.get $v v128.store align=4
          local.get $out i32.const 16 i32.add local.set $out
          br $vector
        end end
        local.get $end local.get $n i32.const 3 i32.and i32.const 4 i32.mul i32.add
        local.set $end
        block $t_done loop $tail
          local.get $out local.get $end i32.ge_u br_if $t_done
          local.get $out local.get $bits i32.store
          local.get $out i32.const 4 i32.add local.set $out
          br $tail
        end end""", locals=(("v", "v128"), ("end", "i32")))
    return [one, four]


def arange_kernels() -> list[Function]:
    """``arange_f32`` and ``arange_i32``."""
    loop = """
        i32.const 0 local.set $i
        block $done loop $next
          local.get $i local.get $n i32.ge_u br_if $done
          local.get $out local.get $i i32.const 4 i32.mul i32.add
          {value}
          local.get $i i32.const 1 i32.add local.set $i
          br $next
        end end"""
    floats = loop.format(value="local.get $start local.get $i f64.convert_i32_u local.get $step "
                               "f64.mul f64.add f32.demote_f64 f32.store")
    ints = loop.format(value="local.get $start local.get $i local.get $step i32.mul i32.add "
                             "i32.store")
    return [Function("arange_f32", (("out", "i32"), ("start", "f64"), ("step", "f64"),
                                    ("n", "i32")), floats, locals=(("i", "i32"),)),
            Function("arange_i32", (("out", "i32"), ("start", "i32"), ("step", "i32"),
                                    ("n", "i32")), ints, locals=(("i", "i32"),))]


def _round() -> str:
    """One Philox round on the counter words c0..c3 (i32 locals) and the key k0, k1."""
    return f"""
          local.get $c0 i64.extend_i32_u i64.const {PHILOX_M0} i64.mul local.set $p0
          local.get $c2 i64.extend_i32_u i64.const {PHILOX_M1} i64.mul local.set $p1
          local.get $p1 i64.const 32 i64.shr_u i32.wrap_i64 local.get $c1 i32.xor
          local.get $key0 i32.xor local.set $c0
          local.get $p1 i32.wrap_i64 local.set $c1
          local.get $p0 i64.const 32 i64.shr_u i32.wrap_i64 local.get $c3 i32.xor
          local.get $key1 i32.xor local.set $c2
          local.get $p0 i32.wrap_i64 local.set $c3
          local.get $key0 i32.const {_i32(PHILOX_W0)} i32.add local.set $key0
          local.get $key1 i32.const {_i32(PHILOX_W1)} i32.add local.set $key1"""


def philox_kernel() -> Function:
    """``philox``."""
    rounds = "".join(_round() for _ in range(PHILOX_ROUNDS))
    words = "".join(f"""
        local.get $skip i32.eqz
        if
          local.get $n i32.eqz br_if $done
          local.get $out local.get $c{w} i32.store
          local.get $out i32.const 4 i32.add local.set $out
          local.get $n i32.const 1 i32.sub local.set $n
        else
          local.get $skip i32.const 1 i32.sub local.set $skip
        end""" for w in range(4))
    body = f"""
    block $done loop $block
      local.get $n i32.eqz br_if $done
      local.get $b0 local.set $c0 local.get $b1 local.set $c1
      local.get $b2 local.set $c2 local.get $b3 local.set $c3
      local.get $k0 local.set $key0 local.get $k1 local.set $key1{rounds}{words}
      ;; the next counter: a 128-bit increment
      local.get $b0 i32.const 1 i32.add local.tee $b0 i32.eqz
      if
        local.get $b1 i32.const 1 i32.add local.tee $b1 i32.eqz
        if
          local.get $b2 i32.const 1 i32.add local.tee $b2 i32.eqz
          if local.get $b3 i32.const 1 i32.add local.set $b3 end
        end
      end
      br $block
    end end"""
    params = tuple((name, "i32") for name in ("out", "n", "skip", "b0", "b1", "b2", "b3", "k0",
                                              "k1"))
    local_vars = (*((name, "i32") for name in ("c0", "c1", "c2", "c3", "key0", "key1")),
                  ("p0", "i64"), ("p1", "i64"))
    return Function("philox", params, body, locals=local_vars)


def kernels() -> list[Function]:
    """Every creation kernel."""
    return [*fill_kernels(), *arange_kernels(), philox_kernel()]
