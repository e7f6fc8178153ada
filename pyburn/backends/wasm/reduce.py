"""Reduction kernels: sum, prod, max, min, any and all over the middle dim of a contiguous
(outer, length, inner) block, the layout the backend brings any reduction to.

``reduce_<op>_<dtype>(out, x, outer, length, inner)``: where ``inner`` is 1 each row is
folded four lanes at a time into one v128, whose lanes are then folded together, and the
row's last ``length % 4`` elements one at a time (float sums thus add in a tree of four,
as numpy's pairwise sums do not: both are within a sum's rounding). Otherwise four
neighbouring outputs are computed at once, down the ``length`` rows. max and min propagate
NaN; any and all read their input as truth values and give bools; integer sums and
products wrap, uint8's at 8 bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import DType, bool_, float32, int32, uint8
from .assemble import Function
from .kinds import KINDS, Kind

_ZERO = "v128.const i32x4 0 0 0 0"


@dataclass(frozen=True)
class Reduction:
    """How one reduction folds lanes: its identity, the fold of two v128s (on the stack),
    and what each loaded vector becomes first (any/all: its truth mask)."""

    identity: dict[str, str]  # by lanes ("f32x4", "i32x4")
    fold: dict[str, str]
    truth: bool = False


REDUCTIONS = {
    "sum": Reduction({"f32x4": _ZERO, "i32x4": _ZERO}, {"f32x4": "f32x4.add",
                                                         "i32x4": "i32x4.add"}),
    "prod": Reduction({"f32x4": "v128.const f32x4 1 1 1 1", "i32x4": "v128.const i32x4 1 1 1 1"},
                      {"f32x4": "f32x4.mul", "i32x4": "i32x4.mul"}),
    "max": Reduction({"f32x4": "v128.const f32x4 -inf -inf -inf -inf",
                      "i32x4": "v128.const i32x4 -2147483648 -2147483648 -2147483648 "
                               "-2147483648"},
                     {"f32x4": "f32x4.max", "i32x4": "i32x4.max_s"}),
    "min": Reduction({"f32x4": "v128.const f32x4 inf inf inf inf",
                      "i32x4": "v128.const i32x4 2147483647 2147483647 2147483647 2147483647"},
                     {"f32x4": "f32x4.min", "i32x4": "i32x4.min_s"}),
    "any": Reduction({"f32x4": _ZERO, "i32x4": _ZERO}, {"f32x4": "v128.or", "i32x4": "v128.or"},
                     truth=True),
    "all": Reduction({"f32x4": "v128.const i32x4 -1 -1 -1 -1",
                      "i32x4": "v128.const i32x4 -1 -1 -1 -1"},
                     {"f32x4": "v128.and", "i32x4": "v128.and"}, truth=True),
}
#: the dtypes each reduction takes (sums and products of bools are the tensor layer's, on
#: ints)
DTYPES = {"sum": (float32, int32, uint8), "prod": (float32, int32, uint8),
          **{op: (float32, int32, uint8, bool_) for op in ("max", "min", "any", "all")}}
#: lanes 2 and 3 onto 0 and 1, then lane 1 onto 0 (i8x16.shuffle's byte indices)
_HIGH_HALF = " ".join(str(b) for b in [*range(8, 16), *range(8)])
_LANE_ONE = " ".join(str(b) for b in [*range(4, 8), *range(4), *range(8, 16)])


def kernel(op: str, dtype: DType) -> Function:
    """``reduce_<op>_<dtype>``."""
    r, kind = REDUCTIONS[op], KINDS[dtype]
    out = KINDS[bool_] if r.truth else kind
    lanes = kind.lanes
    fold = r.fold[lanes]
    truth = f" {_ZERO} {'f32x4' if lanes == 'f32x4' else 'i32x4'}.ne" if r.truth else ""
    finish = " v128.const i32x4 1 1 1 1 v128.and" if r.truth else ""

    def take(load: str) -> str:  # acc = fold(acc, the vector at $p)
        return f"local.get $acc local.get $p {load}{truth} {fold} local.set $acc"

    body = f"""
    local.get $inner i32.const 1 i32.eq
    if  ;; rows: each folded along its length
      local.get $x local.set $p
      local.get $out local.set $q
      local.get $outer local.set $o
      block $rows_done loop $row
        local.get $o i32.eqz br_if $rows_done
        {r.identity[lanes]} local.set $acc
        local.get $p local.get $length i32.const -4 i32.and i32.const {kind.size} i32.mul
        i32.add local.set $end
        block $v_done loop $vector
          local.get $p local.get $end i32.ge_u br_if $v_done
          {take(kind.load4)}
          local.get $p i32.const {4 * kind.size} i32.add local.set $p
          br $vector
        end end
        local.get $acc local.get $acc i8x16.shuffle {_HIGH_HALF} local.get $acc {fold}
        local.set $acc
        local.get $acc local.get $acc i8x16.shuffle {_LANE_ONE} local.get $acc {fold}
        local.set $acc
        local.get $p local.get $length i32.const 3 i32.and i32.const {kind.size} i32.mul
        i32.add local.set $end
        block $t_done loop $tail
          local.get $p local.get $end i32.ge_u br_if $t_done
          {take(kind.load1)}
          local.get $p i32.const {kind.size} i32.add local.set $p
          br $tail
        end end
        local.get $q local.get $acc{finish} {out.store1}
        local.get $q i32.const {out.size} i32.add local.set $q
        local.get $o i32.const 1 i32.sub local.set $o
        br $row
      end end
    else  ;; columns: four neighbouring outputs at once, down the length
      i32.const 0 local.set $o
      block $outer_done loop $block
        local.get $o local.get $outer i32.ge_u br_if $outer_done
        i32.const 0 local.set $i
        {_columns(r, kind, out, take, truth, finish, 4)}
        {_columns(r, kind, out, take, truth, finish, 1)}
        local.get $o i32.const 1 i32.add local.set $o
        br $block
      end end
    end"""
    params = tuple((name, "i32") for name in ("out", "x", "outer", "length", "inner"))
    local_vars = (*((name, "i32") for name in ("p", "q", "o", "i", "l", "end")),
                  ("acc", "v128"), ("t", "v128"))
    return Function(f"reduce_{op}_{dtype.name}", params, body, locals=local_vars)


def _columns(r: Reduction, kind: Kind, out: Kind, take, truth: str, finish: str,
             width: int) -> str:
    """Outputs i.. of block o, `width` at a time while `width` of them are left."""
    load, store = (kind.load4, out.store4) if width == 4 else (kind.load1, out.store1)
    label = f"c{width}"
    return f"""
        block ${label}_done loop ${label}
          local.get $i i32.const {width} i32.add local.get $inner i32.gt_u br_if ${label}_done
          {r.identity[kind.lanes]} local.set $acc
          local.get $x local.get $o local.get $length i32.mul local.get $inner i32.mul
          local.get $i i32.add i32.const {kind.size} i32.mul i32.add local.set $p
          local.get $length local.set $l
          block ${label}_l_done loop ${label}_l
            local.get $l i32.eqz br_if ${label}_l_done
            {take(load)}
            local.get $p local.get $inner i32.const {kind.size} i32.mul i32.add local.set $p
            local.get $l i32.const 1 i32.sub local.set $l
            br ${label}_l
          end end
          local.get $out local.get $o local.get $inner i32.mul local.get $i i32.add
          i32.const {out.size} i32.mul i32.add local.get $acc{finish} {store}
          local.get $i i32.const {width} i32.add local.set $i
          br ${label}
        end end"""
