"""Elementwise kernels, generated from the op table's ``wasm`` column (`pyburn.ops.elementwise`):
one function per op, dtype and broadcast pattern, over rows of operands, four elements at a
time in a v128 and the last ``n % 4`` of a row one at a time through the same code (lane 0
of a vector).

A kernel runs rows of outputs (`kernel`): a contiguous operand is one row; a broadcast one
(a bias added to every row, a channel's scale over its positions) is read where the row
starts and splatted, so that no expanded copy is made. Operands are widened to 32-bit
lanes (`kinds`: uint8 arithmetic wraps at 8 bits). Compare and logical ops give a lane
mask, which the kernel turns into bools (0 or 1).
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


def kernel(op: ElementwiseOp, kind: Kind, out: Kind,
           broadcast: tuple[bool, ...] | None = None) -> list[Function]:
    """The function computing `op` on operands of `kind` into contiguous `out`, and the math
    functions it calls: ``<op>_<dtype>(out, x.., rows, n, step..)`` runs `rows` rows of `n`
    outputs, each operand read from its own address, which moves by its `step` (bytes)
    from one row to the next; along a row an operand is contiguous, or, where `broadcast`
    says so (the name then ends in ``_b`` and a 0 or 1 per operand), one element for the
    whole row. A contiguous tensor is one row."""
    operands = ("x",) if op.arity == 1 else ("a", "b")
    spread = broadcast or (False,) * op.arity
    compute = expression(op, kind)
    name = f"{op.name}_{kind.dtype.name}" + \
        (f"_b{''.join(str(int(s)) for s in spread)}" if any(spread) else "")
    walking = [o for o, s in zip(operands, spread) if not s]

    def loop(count: str, width: int, load: str, store: str, label: str) -> str:
        steps = [f"local.get $q_{o} {load} local.set ${o}" for o in walking]
        advance = [f"local.get $q_{o} i32.const {width * kind.size} i32.add local.set $q_{o}"
                   for o in walking]
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
    row_start = [f"local.get $p_{o} {kind.splat} local.set ${o}" if s else
                 f"local.get $p_{o} local.set $q_{o}" for o, s in zip(operands, spread)]
    next_row = [f"local.get $p_{o} local.get $step_{o} i32.add local.set $p_{o}"
                for o in operands]
    body = "\n".join([
        "block $rows_done loop $row",
        "local.get $rows i32.eqz br_if $rows_done",
        *row_start,
        ";; four elements at a time",
        loop("i32.const -4 i32.and", 4, kind.load4, out.store4, "vector"),
        ";; the last n % 4, one at a time",
        loop("i32.const 3 i32.and", 1, kind.load1, out.store1, "tail"),
        *next_row,
        "local.get $rows i32.const 1 i32.sub local.set $rows",
        "br $row",
        "end end"])
    params = (("out", "i32"), *((f"p_{o}", "i32") for o in operands), ("rows", "i32"),
              ("n", "i32"), *((f"step_{o}", "i32") for o in operands))
    local_vars = (*((o, "v128") for o in operands), *((f"q_{o}", "i32") for o in walking),
                  ("t", "v128"), ("end", "i32"))
    return [Function(name, params, body, locals=local_vars), *library(compute)]


def library(compute: str) -> list[Function]:
    """The functions of the math and division libraries that `compute` calls, with theirs."""
    calls = re.findall(r"call \$(\w+)", compute)
    math = [name.removesuffix("_f32x4") for name in calls if name not in division.FUNCTIONS]
    return [*mathlib.needed(math), *division.needed([n for n in calls
                                                      if n in division.FUNCTIONS])]
