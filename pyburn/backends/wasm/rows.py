"""The "softmax" and "layer_norm" capabilities on wasm (``pyburn.ops.capability.SOFTMAX``,
``LAYER_NORM``): one float32 kernel each, reading a row three times (a statistic, a second
one, then the output) and keeping nothing but the statistics.

- ``softmax_f32(out, x, outer, length, inner, log)`` over the contiguous (outer, length,
  inner) block the backend brings the axis to (as the reductions' layout): the max along
  the length, the shift (that max where it is finite, else 0, as the composite shifts), the
  sum of ``e = exp(x - shift)`` with e stored in `out`, then ``e / sum``, or where `log` is
  1 ``(x - shift) - log(sum)``. Where ``inner`` is 1 a row is read four lanes at a time (the
  lanes then folded together) and its last ``length % 4`` elements one at a time, each
  splatted into every lane; otherwise four neighbouring columns run at once down the
  length, and the last ``inner % 4`` columns one at a time through the same code (lane 0 of
  a vector). exp and log are `mathlib`'s, those of the elementwise kernels.
- ``layer_norm_f32[_w][_b](out, x, weight, bias, rows, n, eps)``: rows of n contiguous
  elements: the mean ``sum / n``, the biased variance as the mean of the squared deviations
  (a second pass: no cancellation), then ``(x - mean) * (1 / sqrt(var + eps))``, times the
  weight and plus the bias (n contiguous elements each) in the variants that name them.

Four-lane partial sums (and maxima) are folded so that every lane holds the total
(`_everywhere`): float sums add in a tree of four, as the reductions' do. The max is
``f32x4.pmax`` (``m < x ? x : m``), which skips NaN: wasmtime makes it one instruction, the
NaN-propagating ``f32x4.max`` several (seven times slower measured). The shift of a row
holding NaN then differs from the composite's 0, which changes nothing: its sum is NaN, so
every output is NaN either way.
"""

from __future__ import annotations

from ...dtypes import float32
from . import mathlib
from .assemble import Function
from .kinds import KINDS

_F = KINDS[float32]
_ZERO = "v128.const f32x4 0 0 0 0"
_MINUS_INF = "v128.const f32x4 -inf -inf -inf -inf"
#: i8x16.shuffle's byte indices: the two halves swapped, then the lanes of each pair
_HALVES = " ".join(str(b) for b in [*range(8, 16), *range(8)])
_PAIRS = " ".join(str(b) for b in [*range(4, 8), *range(4), *range(12, 16), *range(8, 12)])


def _loop(label: str, stop: str, body: str) -> str:
    """`body` until the i32 condition `stop` (tested first) holds."""
    return (f"block ${label}_done loop ${label} {stop} br_if ${label}_done\n{body}\n"
            f"br ${label} end end")


def _everywhere(acc: str, fold: str) -> str:
    """v128 local `acc` folded across its lanes by `fold`, the result in every lane."""
    return " ".join(f"local.get ${acc} local.get ${acc} i8x16.shuffle {bytes_} "
                    f"local.get ${acc} {fold} local.set ${acc}" for bytes_ in (_HALVES, _PAIRS))


def _bump(pointer: str, by: str) -> str:
    return f"local.get ${pointer} {by} i32.add local.set ${pointer}"


# ---- softmax -----------------------------------------------------------------------------

def _shift() -> str:
    """$shift = $m where finite, else 0."""
    return (f"local.get $m {_ZERO} local.get $m f32x4.abs "
            "v128.const f32x4 inf inf inf inf f32x4.lt v128.bitselect local.set $shift")


def _exp_of(load: str) -> str:
    """exp(x - shift) of the element(s) at $r, into $t."""
    return f"local.get $r {load} local.get $shift f32x4.sub call $exp_f32x4 local.set $t"


def _softmax_rows() -> str:
    """inner == 1: rows $p (x) and $q (out) of $length elements, $outer of them."""
    vectors = "local.get $r local.get $end i32.ge_u"
    tail = "local.get $r local.get $stop i32.ge_u"
    start = "local.get $p local.set $r local.get $q local.set $w"
    step4 = f"{_bump('r', 'i32.const 16')} {_bump('w', 'i32.const 16')}"
    step1 = f"{_bump('r', 'i32.const 4')} {_bump('w', 'i32.const 4')}"
    max4 = _loop("max4", vectors, f"local.get $m local.get $r {_F.load4} f32x4.pmax "
                                  f"local.set $m {_bump('r', 'i32.const 16')}")
    max1 = _loop("max1", tail, "local.get $m local.get $r v128.load32_splat f32x4.pmax "
                               f"local.set $m {_bump('r', 'i32.const 4')}")
    add = "local.get $s local.get $t f32x4.add local.set $s"
    sum4 = _loop("sum4", vectors, f"{_exp_of(_F.load4)} local.get $w local.get $t "
                                  f"{_F.store4} {add} {step4}")
    sum1 = _loop("sum1", tail, f"{_exp_of('v128.load32_splat')} local.get $w local.get $t "
                               f"{_F.store1} {add} {step1}")
    log4, log1 = (_loop(label, stop, f"local.get $w local.get $r {load} local.get $shift "
                                     f"f32x4.sub local.get $s f32x4.sub {store} {step}")
                  for label, stop, load, store, step in (
                      ("log4", vectors, _F.load4, _F.store4, step4),
                      ("log1", tail, _F.load1, _F.store1, step1)))
    div4, div1 = (_loop(label, stop, f"local.get $w local.get $w {load} local.get $s "
                                     f"f32x4.div {store} {step}")
                  for label, stop, load, store, step in (
                      ("div4", vectors, _F.load4, _F.store4, step4),
                      ("div1", tail, _F.load1, _F.store1, step1)))
    row = f"""
        local.get $p local.get $body i32.add local.set $end
        local.get $p local.get $row i32.add local.set $stop
        ;; the max
        {_MINUS_INF} local.set $m
        local.get $p local.set $r
        {max4}
        {_everywhere("m", "f32x4.pmax")}
        {max1}
        {_shift()}
        ;; e = exp(x - shift) into out, and its sum
        {_ZERO} local.set $s
        {start}
        {sum4}
        {_everywhere("s", "f32x4.add")}
        {sum1}
        ;; the output
        {start}
        local.get $log
        if
          local.get $s call $log_f32x4 local.set $s
          {log4}
          {log1}
        else
          {div4}
          {div1}
        end
        {_bump("p", "local.get $row")}
        {_bump("q", "local.get $row")}
        local.get $o i32.const 1 i32.sub local.set $o"""
    return f"""
      local.get $x local.set $p
      local.get $out local.set $q
      local.get $outer local.set $o
      local.get $length i32.const -4 i32.and i32.const 2 i32.shl local.set $body
      local.get $length i32.const 2 i32.shl local.set $row
      {_loop("row", "local.get $o i32.eqz", row)}"""


def _softmax_columns(width: int) -> str:
    """inner > 1: columns $j.. of block $o, `width` at a time while `width` are left; the
    block's rows are $row bytes apart."""
    load, store = (_F.load4, _F.store4) if width == 4 else (_F.load1, _F.store1)
    label = f"c{width}"
    down = "local.get $l i32.eqz"
    start = ("local.get $p local.set $r local.get $q local.set $w "
             "local.get $length local.set $l")
    step = (f"{_bump('r', 'local.get $row')} {_bump('w', 'local.get $row')} "
            "local.get $l i32.const 1 i32.sub local.set $l")
    top = _loop(f"{label}_max", down,
                f"local.get $m local.get $r {load} f32x4.pmax local.set $m {step}")
    total = _loop(f"{label}_sum", down,
                  f"{_exp_of(load)} local.get $w local.get $t {store} "
                  f"local.get $s local.get $t f32x4.add local.set $s {step}")
    log = _loop(f"{label}_log", down,
                f"local.get $w local.get $r {load} local.get $shift f32x4.sub "
                f"local.get $s f32x4.sub {store} {step}")
    div = _loop(f"{label}_div", down,
                f"local.get $w local.get $w {load} local.get $s f32x4.div {store} {step}")
    columns = f"""
        local.get $o local.get $length i32.mul local.get $inner i32.mul local.get $j i32.add
        i32.const 2 i32.shl local.tee $p local.get $out i32.add local.set $q
        local.get $p local.get $x i32.add local.set $p
        {_MINUS_INF} local.set $m
        {start}
        {top}
        {_shift()}
        {_ZERO} local.set $s
        {start}
        {total}
        {start}
        local.get $log
        if
          local.get $s call $log_f32x4 local.set $s
          {log}
        else
          {div}
        end
        local.get $j i32.const {width} i32.add local.set $j"""
    return _loop(label, f"local.get $j i32.const {width} i32.add local.get $inner i32.gt_u",
                 columns)


def softmax_kernel() -> Function:
    """``softmax_f32``."""
    block = f"""
        i32.const 0 local.set $j
        {_softmax_columns(4)}
        {_softmax_columns(1)}
        local.get $o i32.const 1 i32.add local.set $o"""
    body = f"""
    local.get $inner i32.const 1 i32.eq
    if  ;; rows: each read along its length
      {_softmax_rows()}
    else  ;; columns: four neighbouring ones at once, down the length
      local.get $inner i32.const 2 i32.shl local.set $row
      i32.const 0 local.set $o
      {_loop("block", "local.get $o local.get $outer i32.ge_u", block)}
    end"""
    params = tuple((name, "i32") for name in ("out", "x", "outer", "length", "inner", "log"))
    local_vars = (*((name, "i32") for name in ("p", "q", "r", "w", "o", "j", "l", "end",
                                                "stop", "body", "row")),
                  *((name, "v128") for name in ("m", "shift", "s", "t")))
    return Function("softmax_f32", params, body, locals=local_vars)


# ---- layer_norm --------------------------------------------------------------------------

def _row_sum(label: str, term: str) -> str:
    """$s = the sum over the row at $p of `term` (v128 code applied to the element(s) at
    $r, on the stack)."""
    vectors = _loop(f"{label}4", "local.get $r local.get $end i32.ge_u",
                    f"local.get $s local.get $r {_F.load4} {term} f32x4.add local.set $s "
                    f"{_bump('r', 'i32.const 16')}")
    tail = _loop(f"{label}1", "local.get $r local.get $stop i32.ge_u",
                 f"local.get $s local.get $r v128.load32_splat {term} f32x4.add "
                 f"local.set $s {_bump('r', 'i32.const 4')}")
    return f"""
        {_ZERO} local.set $s
        local.get $p local.set $r
        {vectors}
        {_everywhere("s", "f32x4.add")}
        {tail}"""


def _normalised(width: int, weight: bool, bias: bool) -> str:
    """The output, `width` elements at a time, from $r (x), $a (weight), $c (bias) to $w."""
    load, store = (_F.load4, _F.store4) if width == 4 else (_F.load1, _F.store1)
    stop = "local.get $r local.get $end i32.ge_u" if width == 4 else \
        "local.get $r local.get $stop i32.ge_u"
    size = f"i32.const {4 * width}"
    scale = f"local.get $a {load} f32x4.mul" if weight else ""
    shift = f"local.get $c {load} f32x4.add" if bias else ""
    advance = " ".join(_bump(p, size) for p, used in (("r", True), ("w", True), ("a", weight),
                                                     ("c", bias)) if used)
    return _loop(f"out{width}", stop,
                 f"local.get $w local.get $r {load} local.get $m f32x4.sub local.get $t "
                 f"f32x4.mul {scale} {shift} {store} {advance}")


def layer_norm_kernel(weight: bool, bias: bool) -> Function:
    """``layer_norm_f32`` with ``_w`` where it takes a weight and ``_b`` a bias."""
    name = "layer_norm_f32" + ("_w" if weight else "") + ("_b" if bias else "")
    squared = "local.get $m f32x4.sub local.tee $t local.get $t f32x4.mul"
    row = f"""
      local.get $p local.get $body i32.add local.set $end
      local.get $p local.get $row i32.add local.set $stop
      ;; the mean
      {_row_sum("mean", "")}
      local.get $s local.get $count f32x4.div local.set $m
      ;; the biased variance, as the mean of the squared deviations; 1 / sqrt(var + eps)
      {_row_sum("var", squared)}
      v128.const f32x4 1 1 1 1 local.get $s local.get $count f32x4.div local.get $e f32x4.add
      f32x4.sqrt f32x4.div local.set $t
      ;; the output
      local.get $p local.set $r local.get $q local.set $w
      local.get $weight local.set $a local.get $bias local.set $c
      {_normalised(4, weight, bias)}
      {_normalised(1, weight, bias)}
      {_bump("p", "local.get $row")}
      {_bump("q", "local.get $row")}
      local.get $rows i32.const 1 i32.sub local.set $rows"""
    body = f"""
    local.get $n f32.convert_i32_u f32x4.splat local.set $count
    local.get $eps f32x4.splat local.set $e
    local.get $n i32.const -4 i32.and i32.const 2 i32.shl local.set $body
    local.get $n i32.const 2 i32.shl local.set $row
    local.get $x local.set $p
    local.get $out local.set $q
    {_loop("row", "local.get $rows i32.eqz", row)}"""
    params = (*((p, "i32") for p in ("out", "x", "weight", "bias", "rows", "n")),
              ("eps", "f32"))
    local_vars = (*((v, "i32") for v in ("p", "q", "r", "w", "a", "c", "end", "stop", "body",
                                         "row")),
                  *((v, "v128") for v in ("count", "e", "s", "m", "t")))
    return Function(name, params, body, locals=local_vars)


def kernels() -> list[Function]:
    """The softmax kernel, the four layer_norm kernels, and the math functions they call."""
    return [softmax_kernel(),
            *(layer_norm_kernel(w, b) for w in (False, True) for b in (False, True)),
            *mathlib.needed(["exp", "log"])]
