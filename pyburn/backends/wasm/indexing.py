"""Indexing kernels: gather, scatter, index_select, nonzero, where and cast, over contiguous
row-major buffers (addresses and sizes as i32 params; indices int32). Where a kernel takes
``(outer, length, inner)`` sizes, the backend has made its operands contiguous and brought
the indexed axis to the middle. An index out of range (negative or past the end) never
makes a kernel touch memory outside its buffers: a read gives 0, a write is skipped.

``gather_<size>(out, x, index, outer, x_len, idx_len, inner)``, for elements of `size`
bytes (1 or 4): ``out[o, j, i] = x[o, index[o, j, i], i]``, x of shape
(outer, x_len, inner), index and out of shape (outer, idx_len, inner).

``scatter_<dtype>(out, index, src, outer, out_len, idx_len, inner, reduce_add)``: out
(outer, out_len, inner) already holds x; for each element of src and index (outer,
idx_len, inner), in row-major order, ``out[o, index[o, j, i], i] = src[o, j, i]`` (the last
write wins), or with `reduce_add` 1 ``+=`` (integers wrap, uint8's at 8 bits; bools OR, as
numpy adds them; floats add in that order).

``index_select_<size>(out, x, index, outer, x_len, n_index, inner)``:
``out[o, k, i] = x[o, index[k], i]``; runs of `BULK` bytes or more are moved with
``memory.copy`` (and ``memory.fill`` for an index out of range), shorter ones element by
element.

``count_nonzero_<dtype>(x, n) -> i32``: how many of the n elements of x are nonzero (NaN is,
-0.0 is not). ``nonzero_<dtype>(out, x, n, rank, shape) -> i32`` writes the row-major
coordinates of those elements, `rank` int32 each and in order, to out (room for the count
times rank; n times rank always fits) and returns the count; `shape` is the address of
`rank` int32 sizes. Both test a v128 of elements at a time and take the nonzero ones from
its lane bitmask.

``where_<size>(out, cond, a, b, n)``: ``out[k] = a[k] if cond[k] else b[k]`` (cond bool),
a ``v128.bitselect`` on a mask of 4 (size 4) or 16 (size 1) cond bytes, then the last ones
one at a time.

``cast_<from>_<to>(out, x, n)`` for every pair of float32, int32, uint8 and bool, as the
cpu backend casts: float to integer truncates toward zero and wraps modulo 2**32 (then to 8
bits for uint8), NaN and +-inf giving 0; int32 to uint8 keeps the low byte; anything to
bool is ``!= 0`` (NaN is true); bool to numbers gives 0 or 1; int32 to float32 rounds to
nearest even. Four or sixteen elements at a time in SIMD (float to integer only where all
of them lie within +-2**31, which ``i32x4.trunc_sat_f32x4_s`` gets exact), the rest one at a
time: below 2**63 in magnitude the scalar way truncates exactly through i64, and a float32
of 2**55 or more is a multiple of 2**32, so 0.
"""

from __future__ import annotations

from ...dtypes import DType, bool_, float32, int32, uint8
from .assemble import Function

DTYPES = (float32, int32, uint8, bool_)
SIZES = (1, 4)
#: the run length (bytes) from which index_select moves runs with memory.copy / fill
BULK = 64

_SIZE = {float32: 4, int32: 4, uint8: 1, bool_: 1}
_LOAD = {1: "i32.load8_u", 4: "i32.load"}
_STORE = {1: "i32.store8", 4: "i32.store"}
_ZERO = "v128.const i32x4 0 0 0 0"
_ONES = "v128.const i32x4 1 1 1 1"
_BYTE = "v128.const i32x4 255 255 255 255"
_I32 = ("i32",)


def _locals(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, "i32") for name in names)


def _blocks(length: str, body: str) -> str:
    """`body` for each j of idx_len and i of inner in every block o of outer: the index at
    $q, src (or out) stepping by one element in `body`; $row is block o's start in
    the indexed buffer, whose middle dim has `length` entries."""
    return f"""
    i32.const 0 local.set $o
    block $blocks_done loop $block
      local.get $o local.get $outer i32.ge_u br_if $blocks_done
      local.get $o local.get ${length} i32.mul local.get $inner i32.mul local.set $row
      local.get $idx_len local.get $inner i32.mul local.set $j
      i32.const 0 local.set $i
      block $elements_done loop $element
        local.get $j i32.eqz br_if $elements_done
        {body}
        local.get $q i32.const 4 i32.add local.set $q
        local.get $i i32.const 1 i32.add local.tee $i local.get $inner i32.eq
        if i32.const 0 local.set $i end
        local.get $j i32.const 1 i32.sub local.set $j
        br $element
      end end
      local.get $o i32.const 1 i32.add local.set $o
      br $block
    end end"""


def _cell(base: str, size: int) -> str:
    """The address of element (row's block, index $k, inner $i) of the buffer at `base`."""
    return (f"local.get ${base} local.get $row local.get $k local.get $inner i32.mul i32.add "
            f"local.get $i i32.add i32.const {size} i32.mul i32.add")


def gather(size: int) -> Function:
    """``gather_<size>``, for elements of `size` bytes."""
    load, store = _LOAD[size], _STORE[size]
    body = f"""
    local.get $index local.set $q
    {_blocks("x_len", f'''
        local.get $q i32.load local.tee $k local.get $x_len i32.lt_u
        if
          local.get $out {_cell("x", size)} {load} {store}
        else
          local.get $out i32.const 0 {store}
        end
        local.get $out i32.const {size} i32.add local.set $out''')}"""
    params = _locals("out", "x", "index", "outer", "x_len", "idx_len", "inner")
    return Function(f"gather_{size}", params, body, locals=_locals("q", "o", "row", "j", "i",
                                                                    "k"))


_ADD = {float32: ("f32.load", "f32.add", "f32.store"), int32: ("i32.load", "i32.add",
                                                               "i32.store"),
        uint8: ("i32.load8_u", "i32.add", "i32.store8"),
        bool_: ("i32.load8_u", "i32.or", "i32.store8")}


def scatter(dtype: DType) -> Function:
    """``scatter_<dtype>``."""
    size = _SIZE[dtype]
    load, add, store = _ADD[dtype]
    body = f"""
    local.get $index local.set $q
    {_blocks("out_len", f'''
        local.get $q i32.load local.tee $k local.get $out_len i32.lt_u
        if
          {_cell("out", size)} local.set $at
          local.get $reduce_add
          if
            local.get $at local.get $at {load} local.get $src {load} {add} {store}
          else
            local.get $at local.get $src {load} {store}
          end
        end
        local.get $src i32.const {size} i32.add local.set $src''')}"""
    params = _locals("out", "index", "src", "outer", "out_len", "idx_len", "inner",
                     "reduce_add")
    return Function(f"scatter_{dtype.name}", params, body,
                    locals=_locals("q", "o", "row", "j", "i", "k", "at"))


def index_select(size: int) -> Function:
    """``index_select_<size>``, for elements of `size` bytes."""
    load, store = _LOAD[size], _STORE[size]

    def elements(label: str, value: str) -> str:  # out[t] = value, t over the run's bytes
        return f"""
          i32.const 0 local.set $t
          block ${label}_done loop ${label}
            local.get $t local.get $run i32.ge_u br_if ${label}_done
            local.get $out local.get $t i32.add {value} {store}
            local.get $t i32.const {size} i32.add local.set $t
            br ${label}
          end end"""
    body = f"""
    local.get $inner i32.const {size} i32.mul local.set $run
    local.get $index local.get $n_index i32.const 4 i32.mul i32.add local.set $q_end
    i32.const 0 local.set $o
    block $blocks_done loop $block
      local.get $o local.get $outer i32.ge_u br_if $blocks_done
      local.get $x local.get $o local.get $x_len i32.mul local.get $run i32.mul i32.add
      local.set $base
      local.get $index local.set $q
      block $picks_done loop $pick
        local.get $q local.get $q_end i32.ge_u br_if $picks_done
        local.get $q i32.load local.tee $k local.get $x_len i32.lt_u local.set $valid
        local.get $base local.get $k local.get $run i32.mul i32.add local.set $from
        local.get $run i32.const {BULK} i32.ge_u
        if
          local.get $valid
          if
            local.get $out local.get $from local.get $run memory.copy
          else
            local.get $out i32.const 0 local.get $run memory.fill
          end
        else
          local.get $valid
          if {elements("copy", f"local.get $from local.get $t i32.add {load}")}
          else {elements("zero", "i32.const 0")}
          end
        end
        local.get $out local.get $run i32.add local.set $out
        local.get $q i32.const 4 i32.add local.set $q
        br $pick
      end end
      local.get $o i32.const 1 i32.add local.set $o
      br $block
    end end"""
    params = _locals("out", "x", "index", "outer", "x_len", "n_index", "inner")
    return Function(f"index_select_{size}", params, body,
                    locals=_locals("run", "q", "q_end", "o", "base", "k", "valid", "from",
                                   "t"))


# ---- nonzero ---------------------------------------------------------------------------------

#: per dtype: elements per v128, the bitmask of the nonzero ones of the v128 at the address
#: on the stack, and whether the element at the address on the stack is nonzero (0 or 1)
_NONZERO = {
    float32: (4, f"v128.load align=4 {_ZERO} f32x4.ne i32x4.bitmask",
              "f32.load f32.const 0 f32.ne"),
    int32: (4, f"v128.load align=4 {_ZERO} i32x4.ne i32x4.bitmask",
            "i32.load i32.const 0 i32.ne"),
    **{dtype: (16, f"v128.load align=1 {_ZERO} i8x16.ne i8x16.bitmask",
               "i32.load8_u i32.const 0 i32.ne") for dtype in (uint8, bool_)},
}


def _chunks(dtype: DType, per_lane: str, per_element: str) -> str:
    """`per_lane` for each set bit ($m's lowest, element $e plus the bit's number) of each
    whole v128's nonzero bitmask $m, then `per_element` for each element $e left."""
    width, mask, test = _NONZERO[dtype]
    size = _SIZE[dtype]
    return f"""
    i32.const 0 local.set $e
    block $vectors_done loop $vector
      local.get $n local.get $e i32.sub i32.const {width} i32.lt_u br_if $vectors_done
      local.get $x local.get $e i32.const {size} i32.mul i32.add {mask} local.set $m
      {per_lane}
      local.get $e i32.const {width} i32.add local.set $e
      br $vector
    end end
    block $tail_done loop $tail
      local.get $e local.get $n i32.ge_u br_if $tail_done
      local.get $x local.get $e i32.const {size} i32.mul i32.add {test}
      {per_element}
      local.get $e i32.const 1 i32.add local.set $e
      br $tail
    end end"""


def count_nonzero(dtype: DType) -> Function:
    """``count_nonzero_<dtype>``."""
    body = f"""
    {_chunks(dtype, "local.get $count local.get $m i32.popcnt i32.add local.set $count",
             "local.get $count i32.add local.set $count")}
    local.get $count"""
    return Function(f"count_nonzero_{dtype.name}", _locals("x", "n"), body, results=_I32,
                    locals=_locals("e", "m", "count"))


def _emit(label: str) -> str:
    """The coordinates of flat index $f (which this uses up) as row $count of out, and
    $count one more."""
    return f"""
      local.get $out local.get $count local.get $rank i32.mul i32.const 4 i32.mul i32.add
      local.set $w
      local.get $rank local.set $d
      block ${label}_done loop ${label}
        local.get $d i32.eqz br_if ${label}_done
        local.get $d i32.const 1 i32.sub local.tee $d i32.const 4 i32.mul local.set $at
        local.get $shape local.get $at i32.add i32.load local.set $s
        local.get $w local.get $at i32.add local.get $f local.get $s i32.rem_u i32.store
        local.get $f local.get $s i32.div_u local.set $f
        br ${label}
      end end
      local.get $count i32.const 1 i32.add local.set $count"""


def nonzero(dtype: DType) -> Function:
    """``nonzero_<dtype>``."""
    lanes = f"""
      block $lanes_done loop $lane
        local.get $m i32.eqz br_if $lanes_done
        local.get $e local.get $m i32.ctz i32.add local.set $f
        {_emit("lane_dims")}
        local.get $m local.get $m i32.const 1 i32.sub i32.and local.set $m
        br $lane
      end end"""
    element = f"""
      if
        local.get $e local.set $f
        {_emit("tail_dims")}
      end"""
    body = f"""
    {_chunks(dtype, lanes, element)}
    local.get $count"""
    return Function(f"nonzero_{dtype.name}", _locals("out", "x", "n", "rank", "shape"), body,
                    results=_I32, locals=_locals("e", "m", "count", "f", "w", "d", "at", "s"))


# ---- where -----------------------------------------------------------------------------------

def where(size: int) -> Function:
    """``where_<size>``, for elements of `size` bytes."""
    load, store = _LOAD[size], _STORE[size]
    if size == 4:  # four cond bytes, each spread over its lane
        width = 4
        mask = (f"local.get $cond v128.load32_zero align=1 {_ZERO} i8x16.ne local.tee $m "
                "local.get $m i8x16.shuffle 0 0 0 0 1 1 1 1 2 2 2 2 3 3 3 3")
    else:
        width = 16
        mask = f"local.get $cond v128.load align=1 {_ZERO} i8x16.ne"
    align = f"align={size}"

    def advance(count: int) -> str:
        return " ".join(f"local.get ${p} i32.const {step} i32.add local.set ${p}" for p, step in
                        (("out", count * size), ("a", count * size), ("b", count * size),
                         ("cond", count)))
    body = f"""
    local.get $out local.get $n i32.const {size} i32.mul i32.add local.set $end
    local.get $out local.get $n i32.const -{width} i32.and i32.const {size} i32.mul i32.add
    local.set $vectors_end
    block $vectors_done loop $vector
      local.get $out local.get $vectors_end i32.ge_u br_if $vectors_done
      local.get $out local.get $a v128.load {align} local.get $b v128.load {align} {mask}
      v128.bitselect v128.store {align}
      {advance(width)}
      br $vector
    end end
    block $tail_done loop $tail
      local.get $out local.get $end i32.ge_u br_if $tail_done
      local.get $out local.get $a {load} local.get $b {load} local.get $cond i32.load8_u
      select {store}
      {advance(1)}
      br $tail
    end end"""
    return Function(f"where_{size}", _locals("out", "cond", "a", "b", "n"), body,
                    locals=(*_locals("end", "vectors_end"), ("m", "v128")))


# ---- cast ------------------------------------------------------------------------------------

_SCALAR_LOAD = {float32: "f32.load", int32: "i32.load", uint8: "i32.load8_u",
                bool_: "i32.load8_u"}
_SCALAR_STORE = {float32: "f32.store", int32: "i32.store", uint8: "i32.store8",
                 bool_: "i32.store8"}
#: a float to its integer, wrapped to 32 bits: exact through i64 below 2**63 in magnitude,
#: and 0 from there (a multiple of 2**32), for +-inf, and (trunc_sat's) for NaN
_F_TO_I = ("local.tee $f i64.trunc_sat_f32_s i32.wrap_i64 i32.const 0 local.get $f f32.abs "
           "f32.const 9223372036854775808 f32.lt select")
_TRUTH = "i32.const 0 i32.ne"
#: one element's conversion, from the loaded value to the one to store
_SCALAR = {
    (float32, int32): _F_TO_I, (float32, uint8): _F_TO_I,
    (float32, bool_): "f32.const 0 f32.ne",
    (int32, float32): "f32.convert_i32_s", (int32, uint8): "", (int32, bool_): _TRUTH,
    (uint8, float32): "f32.convert_i32_u", (uint8, int32): "", (uint8, bool_): _TRUTH,
    (bool_, float32): f"{_TRUTH} f32.convert_i32_u", (bool_, int32): _TRUTH,
    (bool_, uint8): _TRUTH,
}
#: four elements' conversion in 32-bit lanes (one-byte pairs: sixteen, in byte lanes); the
#: float to integer ones only where every lane is within +-2**31
_VECTOR = {
    (float32, int32): "i32x4.trunc_sat_f32x4_s",
    (float32, uint8): f"i32x4.trunc_sat_f32x4_s {_BYTE} v128.and",
    (float32, bool_): f"{_ZERO} f32x4.ne {_ONES} v128.and",
    (int32, float32): "f32x4.convert_i32x4_s", (int32, uint8): f"{_BYTE} v128.and",
    (int32, bool_): f"{_ZERO} i32x4.ne {_ONES} v128.and",
    (uint8, float32): "f32x4.convert_i32x4_u", (uint8, int32): "",
    (bool_, float32): f"{_ZERO} i32x4.ne v128.const f32x4 1 1 1 1 v128.and",
    (bool_, int32): f"{_ZERO} i32x4.ne {_ONES} v128.and",
    **{pair: f"{_ZERO} i8x16.ne v128.const i8x16 {' '.join(['1'] * 16)} v128.and"
       for pair in ((uint8, bool_), (bool_, uint8))},
}
_WITHIN_I32 = "f32x4.abs v128.const f32x4 2147483648 2147483648 2147483648 2147483648 f32x4.lt"


def cast(source: DType, target: DType) -> Function:
    """``cast_<source>_<target>``."""
    s_size, t_size = _SIZE[source], _SIZE[target]
    convert = _VECTOR[source, target]
    if s_size == 4 and t_size == 1:  # four v128s narrowed into one
        width = 16
        loads = [f"local.get $x v128.load offset={16 * k} align=4 local.set $v{k}"
                 for k in range(4)]
        halves = [f"local.get $v{k} {convert} local.get $v{k + 1} {convert} "
                  "i16x8.narrow_i32x4_u" for k in (0, 2)]
        vector = f"local.get $out {' '.join(halves)} i8x16.narrow_i16x8_u v128.store align=1"
    else:
        width = 16 if s_size == t_size == 1 else 4
        if s_size == 4:
            load = "v128.load align=4"
        elif width == 16:
            load = "v128.load align=1"
        else:  # four bytes widened to four lanes
            load = "v128.load32_zero align=1 i16x8.extend_low_i8x16_u i32x4.extend_low_i16x8_u"
        loads = [f"local.get $x {load} local.set $v0"]
        vector = f"local.get $out local.get $v0 {convert} v128.store align={t_size}"
    vector += (f" local.get $x i32.const {width * s_size} i32.add local.set $x"
               f" local.get $out i32.const {width * t_size} i32.add local.set $out")

    def scalars(label: str) -> str:  # $c elements one at a time
        return f"""
        block ${label}_done loop ${label}
          local.get $c i32.eqz br_if ${label}_done
          local.get $out local.get $x {_SCALAR_LOAD[source]} {_SCALAR[source, target]}
          {_SCALAR_STORE[target]}
          local.get $x i32.const {s_size} i32.add local.set $x
          local.get $out i32.const {t_size} i32.add local.set $out
          local.get $c i32.const 1 i32.sub local.set $c
          br ${label}
        end end"""
    if source is float32 and target is not bool_:  # SIMD only where it is exact
        within = " ".join(f"local.get $v{k} {_WITHIN_I32}" + (" v128.and" if k else "")
                          for k in range(len(loads)))
        vector = f"""{within} i32x4.all_true
        if {vector}
        else i32.const {width} local.set $c {scalars("lanes")}
        end"""
    body = f"""
    local.get $n local.set $left
    block $vectors_done loop $vector
      local.get $left i32.const {width} i32.lt_u br_if $vectors_done
      {' '.join(loads)}
      {vector}
      local.get $left i32.const {width} i32.sub local.set $left
      br $vector
    end end
    local.get $left local.set $c
    {scalars("tail")}"""
    local_vars = (*_locals("left", "c"), *((f"v{k}", "v128") for k in range(len(loads))),
                  *((("f", "f32"),) if "$f" in _SCALAR[source, target] else ()))
    return Function(f"cast_{source.name}_{target.name}", _locals("out", "x", "n"), body,
                    locals=local_vars)


CASTS = [(a, b) for a in DTYPES for b in DTYPES if a is not b]


def kernels() -> list[Function]:
    """Every kernel of this module."""
    return [*(gather(s) for s in SIZES), *(scatter(d) for d in DTYPES),
            *(index_select(s) for s in SIZES), *(count_nonzero(d) for d in DTYPES),
            *(nonzero(d) for d in DTYPES), *(where(s) for s in SIZES),
            *(cast(a, b) for a, b in CASTS)]
