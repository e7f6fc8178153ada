"""Order kernels: stable sort, argmax/argmin and inclusive scans (cumsum, cumprod), for
float32, int32 and uint8 (and bool for sort and argmax/argmin).

``sort_<dtype>(values_out, indices_out, x, rows, length, descending, scratch)`` sorts each
of the `rows` contiguous rows of `length` elements of `x`, writing the sorted values (the
elements of `x` themselves, bit for bit) to `values_out` and their int32 positions in the row
to `indices_out`, rows after rows. Each element becomes a 64-bit word: an unsigned 32-bit key
that orders as the values do (floats: their bits with the sign flipped into order, -0.0 made
+0.0 and every NaN the largest key; int32: the sign bit flipped), all its bits inverted where
`descending` is nonzero, over the element's position. The words are distinct, so sorting
them is stable by construction: equal values keep their original order in both directions,
NaN is last ascending and first descending, and -0.0 and 0.0 are equal (as numpy's stable
argsort has them, read as pyburn's cpu backend reads it for descending). The words are sorted
in `scratch` (`sort_scratch_bytes`, two arrays of `length` words; 8-byte alignment is best) by
insertion sort in runs of 16, then a bottom-up merge of runs that ping-pongs between the two
arrays: O(n log n) (a row of n elements takes 16n bytes of scratch, so n < 2**28).
None of the outputs and the scratch may overlap `x` or one another.

``arg_<op>_<dtype>(out, x, outer, length, inner)``, op "argmax" or "argmin": the int32 index
of the first largest (smallest) element along the middle dim of a contiguous (outer, length,
inner) block, into `out` (outer, inner). NaN counts as both the largest and the smallest
value: the first NaN wins. Rows (inner 1, length >= 8) are scanned four lanes at a time,
whose winners are then compared by (value, index); otherwise four neighbouring outputs are
found at once down the length, and the last ``inner % 4`` one at a time. An empty length
gives zeros (the tensor layer refuses one).

``scan_<op>_<dtype>(out, x, outer, length, inner)``, op "sum" or "prod": the inclusive
running sum (product) along the middle dim of the same layout, into `out` of x's shape, in
the input dtype and in order (the first element copied, then one operation per element, as
numpy's accumulate does): integers wrap, uint8 at 8 bits. Four neighbouring columns go
at once where ``inner >= 4``.
"""

from __future__ import annotations

from ...dtypes import DType, bool_, float32, int32, uint8
from .assemble import Function
from .kinds import KINDS, Kind

#: elements insertion-sorted into each run before the merges
RUN = 16
SORT_DTYPES = (float32, int32, uint8, bool_)
ARG_DTYPES = (float32, int32, uint8, bool_)
SCAN_DTYPES = (float32, int32, uint8)
_ZERO = "v128.const i32x4 0 0 0 0"


def sort_scratch_bytes(length: int, dtype: DType) -> int:
    """Bytes of scratch `sort_<dtype>` needs for rows of `length` elements (any dtype: two
    arrays of one 64-bit word per element)."""
    return 16 * length


def _scalar(kind: Kind) -> tuple[str, str, str]:
    """A kind's scalar value type, and the loads and stores of one element as that type."""
    if kind.dtype is float32:
        return "f32", "f32.load", "f32.store"
    if kind.size == 4:
        return "i32", "i32.load", "i32.store"
    return "i32", "i32.load8_u", "i32.store8"


def _key(dtype: DType) -> str:
    """The element at $from as its unsigned order key, onto the stack (floats: via $f)."""
    if dtype is float32:
        return """
      local.get $from f32.load local.tee $f i32.reinterpret_f32 local.tee $k
      local.get $k i32.const 31 i32.shr_s i32.const -2147483648 i32.or i32.xor
      i32.const -2147483648 local.get $f f32.const 0 f32.ne select  ;; -0.0 as 0.0
      local.set $k
      i32.const -1 local.get $k local.get $f local.get $f f32.ne select  ;; NaN the largest"""
    if dtype is int32:
        return "local.get $from i32.load i32.const -2147483648 i32.xor"
    return "local.get $from i32.load8_u"


def _min_bytes(left: str, cap: str, target: str) -> str:
    """``target = min(left, cap)``, both unsigned, `left` and `cap` local names."""
    return (f"local.get ${left} local.get ${cap} local.get ${left} local.get ${cap} "
            f"i32.lt_u select local.set ${target}")


def sort_kernel(dtype: DType) -> Function:
    """``sort_<dtype>``."""
    kind = KINDS[dtype]
    size = kind.size
    move = "i32.load i32.store" if size == 4 else "i32.load8_u i32.store8"
    body = f"""
    i32.const -1 i32.const 0 local.get $descending select local.set $flip
    local.get $length i32.const 8 i32.mul local.set $total
    local.get $scratch local.set $a
    local.get $scratch local.get $total i32.add local.set $b
    block $rows_done loop $row
      local.get $rows i32.eqz br_if $rows_done
      ;; the words: key (inverted if descending) over position
      local.get $x local.set $from
      local.get $a local.set $to
      i32.const 0 local.set $i
      block $keys_done loop $keys
        local.get $i local.get $length i32.ge_u br_if $keys_done
        local.get $to
        {_key(dtype)}
        local.get $flip i32.xor i64.extend_i32_u i64.const 32 i64.shl
        local.get $i i64.extend_i32_u i64.or i64.store
        local.get $from i32.const {size} i32.add local.set $from
        local.get $to i32.const 8 i32.add local.set $to
        local.get $i i32.const 1 i32.add local.set $i
        br $keys
      end end
      ;; runs of {RUN} words, each sorted in place by insertion
      local.get $a local.get $total i32.add local.set $end
      local.get $a local.set $lo
      block $runs_done loop $run
        local.get $lo local.get $end i32.ge_u br_if $runs_done
        local.get $end local.get $lo i32.sub local.set $t
        i32.const {8 * RUN} local.set $width
        {_min_bytes("t", "width", "t")}
        local.get $lo local.get $t i32.add local.set $hi
        local.get $lo i32.const 8 i32.add local.set $p
        block $inserted loop $insert
          local.get $p local.get $hi i32.ge_u br_if $inserted
          local.get $p i64.load local.set $v
          local.get $p local.set $q
          block $placed loop $shift
            local.get $q local.get $lo i32.le_u br_if $placed
            local.get $q i32.const 8 i32.sub i64.load local.tee $w local.get $v i64.lt_u
            br_if $placed
            local.get $q local.get $w i64.store
            local.get $q i32.const 8 i32.sub local.set $q
            br $shift
          end end
          local.get $q local.get $v i64.store
          local.get $p i32.const 8 i32.add local.set $p
          br $insert
        end end
        local.get $hi local.set $lo
        br $run
      end end
      ;; merge neighbouring runs (bytes `width` each) from src into dst, then swap them
      local.get $a local.set $src
      local.get $b local.set $dst
      i32.const {8 * RUN} local.set $width
      block $passes_done loop $pass
        local.get $width local.get $total i32.ge_u br_if $passes_done
        i32.const 0 local.set $lo
        block $merges_done loop $merge
          local.get $lo local.get $total i32.ge_u br_if $merges_done
          local.get $total local.get $lo i32.sub local.set $t
          {_min_bytes("t", "width", "t")}
          local.get $lo local.get $t i32.add local.set $mid
          local.get $total local.get $mid i32.sub local.set $t
          {_min_bytes("t", "width", "t")}
          local.get $mid local.get $t i32.add local.set $hi
          local.get $src local.get $lo i32.add local.set $p
          local.get $src local.get $mid i32.add local.tee $pe local.set $q
          local.get $src local.get $hi i32.add local.set $qe
          local.get $dst local.get $lo i32.add local.set $d
          block $merged
            local.get $q local.get $qe i32.ge_u br_if $merged  ;; no right run
            ;; already in order: the left run's last before the right run's first
            local.get $pe i32.const 8 i32.sub i64.load local.get $q i64.load i64.lt_u
            br_if $merged
            local.get $p i64.load local.set $v
            local.get $q i64.load local.set $w
            loop $step
              local.get $w local.get $v i64.lt_u
              if
                local.get $d local.get $w i64.store
                local.get $d i32.const 8 i32.add local.set $d
                local.get $q i32.const 8 i32.add local.tee $q local.get $qe i32.ge_u
                br_if $merged
                local.get $q i64.load local.set $w
              else
                local.get $d local.get $v i64.store
                local.get $d i32.const 8 i32.add local.set $d
                local.get $p i32.const 8 i32.add local.tee $p local.get $pe i32.ge_u
                br_if $merged
                local.get $p i64.load local.set $v
              end
              br $step
            end
          end
          ;; what is left of either run, in order
          local.get $d local.get $p local.get $pe local.get $p i32.sub local.tee $t
          memory.copy
          local.get $d local.get $t i32.add local.get $q local.get $qe local.get $q i32.sub
          memory.copy
          local.get $hi local.set $lo
          br $merge
        end end
        local.get $src local.set $t
        local.get $dst local.set $src
        local.get $t local.set $dst
        local.get $width i32.const 1 i32.shl local.set $width
        br $pass
      end end
      ;; the positions, and the elements of x at them
      local.get $src local.set $p
      local.get $src local.get $total i32.add local.set $end
      block $out_done loop $out
        local.get $p local.get $end i32.ge_u br_if $out_done
        local.get $p i64.load i32.wrap_i64 local.set $i
        local.get $indices_out local.get $i i32.store
        local.get $values_out local.get $x local.get $i i32.const {size} i32.mul i32.add
        {move}
        local.get $values_out i32.const {size} i32.add local.set $values_out
        local.get $indices_out i32.const 4 i32.add local.set $indices_out
        local.get $p i32.const 8 i32.add local.set $p
        br $out
      end end
      local.get $x local.get $length i32.const {size} i32.mul i32.add local.set $x
      local.get $rows i32.const 1 i32.sub local.set $rows
      br $row
    end end"""
    params = tuple((name, "i32") for name in ("values_out", "indices_out", "x", "rows",
                                               "length", "descending", "scratch"))
    local_vars = (*((name, "i32") for name in ("flip", "total", "a", "b", "from", "to", "i",
                                               "k", "end", "lo", "mid", "hi", "t", "width",
                                               "p", "q", "pe", "qe", "d", "src", "dst")),
                  ("v", "i64"), ("w", "i64"), ("f", "f32"))
    return Function(f"sort_{dtype.name}", params, body, locals=local_vars)


def _arg_parts(op: str, kind: Kind) -> dict[str, str]:
    """The compares of `op` on `kind` (which element wins), scalar and on lanes, and the
    scalar equality."""
    wins = "gt" if op == "argmax" else "lt"
    if kind.dtype is float32:
        return {"cmp1": f"f32.{wins}", "cmp4": f"f32x4.{wins}", "eq1": "f32.eq"}
    return {"cmp1": f"i32.{wins}_s", "cmp4": f"i32x4.{wins}_s", "eq1": "i32.eq"}


def _arg_vector_step(kind: Kind, cmp4: str) -> str:
    """Lanes of $v that beat $best (a NaN beats any number, nothing beats a NaN) take its
    value, and their index from $lv."""
    if kind.dtype is float32:
        mask = (f"local.get $v local.get $best {cmp4} local.get $v local.get $v f32x4.ne "
                "v128.or local.get $best local.get $best f32x4.eq v128.and")
    else:
        mask = f"local.get $v local.get $best {cmp4}"
    return f"""{mask} local.set $m
          local.get $v local.get $best local.get $m v128.bitselect local.set $best
          local.get $lv local.get $bi local.get $m v128.bitselect local.set $bi"""


def _arg_scalar_step(kind: Kind, cmp1: str) -> str:
    """$sv (at index $l, later than $bidx) replaces $bv where it wins."""
    nan = " local.get $sv local.get $sv f32.ne i32.or" if kind.dtype is float32 else ""
    return f"""local.get $sv local.get $bv {cmp1}{nan}
          if local.get $sv local.set $bv local.get $l local.set $bidx end"""


def _arg_lanes(kind: Kind, parts: dict[str, str]) -> str:
    """($bv, $bidx): the winner of $best's four lanes, by value, then the smaller index."""
    lanes = kind.lanes
    earlier = "local.get $si local.get $bidx i32.lt_u"
    tie = f"local.get $sv local.get $bv {parts['eq1']} {earlier} i32.and"
    if kind.dtype is float32:
        better = f"""
        local.get $bv local.get $bv f32.ne
        if  ;; only an earlier NaN beats a NaN
          local.get $sv local.get $sv f32.ne {earlier} i32.and local.set $c
        else
          local.get $sv local.get $sv f32.ne local.get $sv local.get $bv {parts['cmp1']} i32.or
          {tie} i32.or local.set $c
        end"""
    else:
        better = f"""
        local.get $sv local.get $bv {parts['cmp1']} {tie} i32.or local.set $c"""
    text = [f"local.get $best {lanes}.extract_lane 0 local.set $bv",
            "local.get $bi i32x4.extract_lane 0 local.set $bidx"]
    for lane in (1, 2, 3):
        text += [f"local.get $best {lanes}.extract_lane {lane} local.set $sv",
                 f"local.get $bi i32x4.extract_lane {lane} local.set $si", better,
                 "local.get $c if local.get $sv local.set $bv local.get $si local.set $bidx end"]
    return "\n        ".join(text)


def arg_kernel(op: str, dtype: DType) -> Function:
    """``arg_<op>_<dtype>``, op "argmax" or "argmin"."""
    kind = KINDS[dtype]
    size = kind.size
    scalar, load1, _ = _scalar(kind)
    parts = _arg_parts(op, kind)
    vector_step = _arg_vector_step(kind, parts["cmp4"])
    nan_stop = "local.get $bv local.get $bv f32.ne br_if {label}" if dtype is float32 else ""
    start = (f"local.get $x local.get $o local.get $length i32.mul local.get $inner i32.mul "
             f"local.get $i i32.add i32.const {size} i32.mul i32.add local.set $p")
    stride = f"local.get $p local.get $inner i32.const {size} i32.mul i32.add local.set $p"
    body = f"""
    local.get $length i32.eqz
    if  ;; nothing to look at: index 0
      local.get $out i32.const 0 local.get $outer local.get $inner i32.mul i32.const 4 i32.mul
      memory.fill
      return
    end
    local.get $inner i32.const 1 i32.eq local.get $length i32.const 8 i32.ge_u i32.and
    if  ;; rows: lane k looks at elements k, k + 4, ...; then the last length % 4
      local.get $x local.set $p
      local.get $out local.set $q
      local.get $outer local.set $o
      block $rows_done loop $row
        local.get $o i32.eqz br_if $rows_done
        local.get $p {kind.load4} local.set $best
        v128.const i32x4 0 1 2 3 local.set $bi
        v128.const i32x4 4 5 6 7 local.set $lv
        local.get $p local.get $length i32.const -4 i32.and i32.const {size} i32.mul i32.add
        local.set $end
        local.get $p i32.const {4 * size} i32.add local.set $p
        block $v_done loop $vector
          local.get $p local.get $end i32.ge_u br_if $v_done
          local.get $p {kind.load4} local.set $v
          {vector_step}
          local.get $lv v128.const i32x4 4 4 4 4 i32x4.add local.set $lv
          local.get $p i32.const {4 * size} i32.add local.set $p
          br $vector
        end end
        {_arg_lanes(kind, parts)}
        local.get $length i32.const -4 i32.and local.set $l
        block $t_done loop $tail
          local.get $l local.get $length i32.ge_u br_if $t_done
          {nan_stop.format(label="$t_done")}
          local.get $p {load1} local.set $sv
          {_arg_scalar_step(kind, parts["cmp1"])}
          local.get $p i32.const {size} i32.add local.set $p
          local.get $l i32.const 1 i32.add local.set $l
          br $tail
        end end
        local.get $length i32.const 3 i32.and i32.const {size} i32.mul local.get $end i32.add
        local.set $p
        local.get $q local.get $bidx i32.store
        local.get $q i32.const 4 i32.add local.set $q
        local.get $o i32.const 1 i32.sub local.set $o
        br $row
      end end
    else  ;; columns: four neighbouring outputs at once down the length, then one at a time
      i32.const 0 local.set $o
      block $outer_done loop $block
        local.get $o local.get $outer i32.ge_u br_if $outer_done
        i32.const 0 local.set $i
        block $c4_done loop $c4
          local.get $i i32.const 4 i32.add local.get $inner i32.gt_u br_if $c4_done
          {start}
          local.get $p {kind.load4} local.set $best
          {_ZERO} local.set $bi
          v128.const i32x4 1 1 1 1 local.set $lv
          i32.const 1 local.set $l
          block $c4_l_done loop $c4_l
            local.get $l local.get $length i32.ge_u br_if $c4_l_done
            {stride}
            local.get $p {kind.load4} local.set $v
            {vector_step}
            local.get $lv v128.const i32x4 1 1 1 1 i32x4.add local.set $lv
            local.get $l i32.const 1 i32.add local.set $l
            br $c4_l
          end end
          local.get $out local.get $o local.get $inner i32.mul local.get $i i32.add
          i32.const 4 i32.mul i32.add local.get $bi v128.store align=4
          local.get $i i32.const 4 i32.add local.set $i
          br $c4
        end end
        block $c1_done loop $c1
          local.get $i local.get $inner i32.ge_u br_if $c1_done
          {start}
          local.get $p {load1} local.set $bv
          i32.const 0 local.set $bidx
          i32.const 1 local.set $l
          block $c1_l_done loop $c1_l
            local.get $l local.get $length i32.ge_u br_if $c1_l_done
            {nan_stop.format(label="$c1_l_done")}
            {stride}
            local.get $p {load1} local.set $sv
            {_arg_scalar_step(kind, parts["cmp1"])}
            local.get $l i32.const 1 i32.add local.set $l
            br $c1_l
          end end
          local.get $out local.get $o local.get $inner i32.mul local.get $i i32.add
          i32.const 4 i32.mul i32.add local.get $bidx i32.store
          local.get $i i32.const 1 i32.add local.set $i
          br $c1
        end end
        local.get $o i32.const 1 i32.add local.set $o
        br $block
      end end
    end"""
    params = tuple((name, "i32") for name in ("out", "x", "outer", "length", "inner"))
    local_vars = (*((name, "i32") for name in ("p", "q", "o", "i", "l", "end", "bidx", "si",
                                               "c")),
                  ("bv", scalar), ("sv", scalar),
                  *((name, "v128") for name in ("best", "bi", "lv", "v", "m")))
    return Function(f"arg_{op}_{dtype.name}", params, body, locals=local_vars)


def scan_kernel(op: str, dtype: DType) -> Function:
    """``scan_<op>_<dtype>``, op "sum" or "prod"."""
    kind = KINDS[dtype]
    size = kind.size
    scalar, load1, store1 = _scalar(kind)
    word = "add" if op == "sum" else "mul"
    fold1 = f"{scalar}.{word}"
    fold4 = f"{kind.lanes}.{word}"
    at = (f"local.get $o local.get $length i32.mul local.get $inner i32.mul local.get $i "
          f"i32.add i32.const {size} i32.mul local.set $off "
          "local.get $x local.get $off i32.add local.set $p "
          "local.get $out local.get $off i32.add local.set $q")
    step = ("local.get $p local.get $stride i32.add local.set $p "
            "local.get $q local.get $stride i32.add local.set $q")

    def columns(width: int, load: str, store: str, acc: str) -> str:
        label = f"c{width}"
        return f"""
        block ${label}_done loop ${label}
          local.get $i i32.const {width} i32.add local.get $inner i32.gt_u br_if ${label}_done
          {at}
          block ${label}_l_done
            local.get $length i32.eqz br_if ${label}_l_done
            local.get $p {load} local.set ${acc}
            local.get $q local.get ${acc} {store}
            i32.const 1 local.set $l
            loop ${label}_l
              local.get $l local.get $length i32.ge_u br_if ${label}_l_done
              {step}
              local.get ${acc} local.get $p {load} {fold4 if width == 4 else fold1}
              local.set ${acc}
              local.get $q local.get ${acc} {store}
              local.get $l i32.const 1 i32.add local.set $l
              br ${label}_l
            end
          end
          local.get $i i32.const {width} i32.add local.set $i
          br ${label}
        end end"""
    body = f"""
    local.get $inner i32.const {size} i32.mul local.set $stride
    i32.const 0 local.set $o
    block $outer_done loop $block
      local.get $o local.get $outer i32.ge_u br_if $outer_done
      i32.const 0 local.set $i
      {columns(4, kind.load4, kind.store4, "acc")}
      {columns(1, load1, store1, "s")}
      local.get $o i32.const 1 i32.add local.set $o
      br $block
    end end"""
    params = tuple((name, "i32") for name in ("out", "x", "outer", "length", "inner"))
    local_vars = (*((name, "i32") for name in ("p", "q", "o", "i", "l", "off", "stride")),
                  ("s", scalar), ("acc", "v128"), ("t", "v128"))
    return Function(f"scan_{op}_{dtype.name}", params, body, locals=local_vars)


def kernels() -> list[Function]:
    """Every kernel of this module: the sorts, argmax/argmin and the scans of each dtype."""
    return [*(sort_kernel(d) for d in SORT_DTYPES),
            *(arg_kernel(op, d) for op in ("argmax", "argmin") for d in ARG_DTYPES),
            *(scan_kernel(op, d) for op in ("sum", "prod") for d in SCAN_DTYPES)]
