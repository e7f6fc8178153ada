"""Elementwise kernels, generated from the op table's ``wasm`` column (`pyburn.ops.elementwise`):
one function per op and dtype, over contiguous operands, four elements at a time in a v128
and the last ``n % 4`` one at a time through the same code (lane 0 of a vector).

A kernel takes ``(out, x, n)`` or ``(out, a, b, n)``: addresses of contiguous buffers and
the element count. Its operands are widened to 32-bit lanes (`kinds`: uint8 arithmetic
wraps at 8 bits). Compare and logical ops give a lane mask, which the kernel turns into
bools (0 or 1).
"""

from __future__ import annotations

import re

from ...ops.elementwise import ElementwiseOp
from . import division, mathlib
from .assemble import Function
from .kinds import Kind

_ONES = "v128.const i32x4 1 1 1 1"


def expression(op: ElementwiseOp, kind: Kind) -> str:
    """The op's WebAssembly on `kind`'s lanes, from its operands' locals onto the stack; a
    compare or logical op's mask made 0 or 1."""
    text = op.wasm_int if kind.integer and op.wasm_int is not None else op.wasm
    if not text:
        raise NotImplementedError(f"the op table has no WebAssembly for {op.name}")
    text = text.replace("{{L}}", kind.lanes)
    return f"{text} {_ONES} v128.and" if op.returns_bool else text


def kernel(op: ElementwiseOp, kind: Kind, out: Kind) -> list[Function]:
    """The function ``<op>_<dtype>`` computing `op` on contiguous operands of `kind` into
    contiguous `out`, and the math functions it calls."""
    operands = ("x",) if op.arity == 1 else ("a", "b")
    compute = expression(op, kind)
    name = f"{op.name}_{kind.dtype.name}"

    def loop(count: str, width: int, load: str, store: str, label: str) -> str:
        steps = [f"local.get $p_{o} {load} local.set ${o}" for o in operands]
        advance = [f"local.get $p_{o} i32.const {width * kind.size} i32.add local.set $p_{o}"
                   for o in operands]
        return "\n".join([
            f"local.get $n {count} i32.const {out.size} i32.mul local.get $out i32.add "
            "local.set $end",
            f"block ${label}_done loop ${label}",
            f"  local.get $out local.get $end i32.ge_u br_if ${label}_done",
            *("  " + s for s in steps),
            f"  local.get $out {compute} {store}",
            f"  local.get $out i32.const {width * out.size} i32.add local.set $out",
            *("  " + a for a in advance),
            f"  br ${label}",
            "end end"])
    body = "\n".join([
        ";; four elements at a time",
        loop("i32.const -4 i32.and", 4, kind.load4, out.store4, "vector"),
        ";; the last n % 4, one at a time",
        loop("i32.const 3 i32.and", 1, kind.load1, out.store1, "tail")])
    params = (("out", "i32"), *((f"p_{o}", "i32") for o in operands), ("n", "i32"))
    local_vars = (*((o, "v128") for o in operands), ("t", "v128"), ("end", "i32"))
    return [Function(name, params, body, locals=local_vars), *library(compute)]


def library(compute: str) -> list[Function]:
    """The functions of the math and division libraries that `compute` calls, with theirs."""
    calls = re.findall(r"call \$(\w+)", compute)
    math = [name.removesuffix("_f32x4") for name in calls if name not in division.FUNCTIONS]
    return [*mathlib.needed(math), *division.needed([n for n in calls
                                                      if n in division.FUNCTIONS])]
