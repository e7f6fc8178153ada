"""The strided copy kernels: every element of a strided view written to another strided view
of the same shape, the wasm backend's one way to move data (making an operand contiguous,
`cat` into slices of its result, `pad` into the inside of its own, `flip`, `permute` and
`expand` materialised), and its float32 twin that adds instead (a transposed convolution's
overlapping windows).

``copy_<size>(dst, src, rank, meta)`` copies elements of `size` bytes. `meta` is the address
of ``4 * rank`` i32 words: the shape, the source's strides, the destination's strides
(strides in bytes, any sign, 0 for a broadcast dim), then `rank` counters that must start
at zero. Runs along the last dim are copied with ``memory.copy`` where both sides are
contiguous, else element by element; the counters then step the outer dims, row-major.
"""

from __future__ import annotations

from .assemble import Function

_LOAD_STORE = {1: ("i32.load8_u", "i32.store8"), 4: ("i32.load", "i32.store"),
               8: ("i64.load", "i64.store")}


def copy_kernel(size: int, accumulate: bool = False) -> Function:
    """``copy_<size>``, for elements of `size` bytes (1, 4 or 8); with `accumulate`,
    ``accumulate_f32``: each float32 of the source added to the destination's (in row-major
    order of the shape, so the destination may overlap itself: a transposed convolution's
    windows)."""
    load, store = _LOAD_STORE[size]
    if accumulate:
        load, store = "f32.load local.get $to f32.load f32.add", "f32.store"
    word = "local.get $meta local.get $d i32.const 4 i32.mul i32.add"  # &shape[d]
    body = f"""
    ;; the last dim: its size, and the two strides
    local.get $rank i32.const 1 i32.sub local.set $last
    local.get $meta local.get $last i32.const 4 i32.mul i32.add i32.load local.set $n
    local.get $meta local.get $rank local.get $last i32.add i32.const 4 i32.mul i32.add
    i32.load local.set $s_src
    local.get $meta local.get $rank i32.const 2 i32.mul local.get $last i32.add
    i32.const 4 i32.mul i32.add i32.load local.set $s_dst
    local.get $s_src i32.const {size} i32.eq local.get $s_dst i32.const {size} i32.eq i32.and
    {"i32.const 0 i32.and" if accumulate else ""} local.set $runs
    block $all_done loop $run
      ;; one run along the last dim
      local.get $runs
      if
        local.get $dst local.get $src local.get $n i32.const {size} i32.mul memory.copy
      else
        local.get $src local.set $from
        local.get $dst local.set $to
        local.get $n local.set $t
        block $run_done loop $element
          local.get $t i32.eqz br_if $run_done
          local.get $to local.get $from {load} {store}
          local.get $from local.get $s_src i32.add local.set $from
          local.get $to local.get $s_dst i32.add local.set $to
          local.get $t i32.const 1 i32.sub local.set $t
          br $element
        end end
      end
      ;; step the counters of the outer dims, the innermost first
      local.get $last i32.const 1 i32.sub local.set $d
      loop $carry
        local.get $d i32.const 0 i32.lt_s br_if $all_done
        ;; counter[d] += 1, and both pointers along dim d
        {word} local.get $rank i32.const 3 i32.mul i32.const 4 i32.mul i32.add local.set $c
        local.get $c local.get $c i32.load i32.const 1 i32.add i32.store
        {word} local.get $rank i32.const 4 i32.mul i32.add i32.load local.set $step_src
        {word} local.get $rank i32.const 8 i32.mul i32.add i32.load local.set $step_dst
        local.get $src local.get $step_src i32.add local.set $src
        local.get $dst local.get $step_dst i32.add local.set $dst
        local.get $c i32.load {word} i32.load i32.lt_s br_if $run
        ;; dim d is done: back to its start, and carry into the dim before it
        local.get $c i32.const 0 i32.store
        local.get $src local.get $step_src {word} i32.load i32.mul i32.sub local.set $src
        local.get $dst local.get $step_dst {word} i32.load i32.mul i32.sub local.set $dst
        local.get $d i32.const 1 i32.sub local.set $d
        br $carry
      end
    end end"""
    params = (("dst", "i32"), ("src", "i32"), ("rank", "i32"), ("meta", "i32"))
    local_vars = tuple((name, "i32") for name in ("last", "n", "s_src", "s_dst", "runs", "from",
                                                  "to", "t", "d", "c", "step_src", "step_dst"))
    return Function("accumulate_f32" if accumulate else f"copy_{size}", params, body,
                    locals=local_vars)
