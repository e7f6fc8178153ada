"""The matmul kernels: ``C = A @ B`` for a batch of contiguous row-major matrices; float32
register-blocked over packed panels, int32 (wrapping) a row of C at a time; and float32
``C = A @ B^T`` for a few rows of A as dot products (a linear layer at a small batch).

``matmul_f32(c, a, b, batches, m, k, n, pack_a, pack_b, b_batch, b_stride)``: for each batch, B
is packed into panels of 8 columns (``k`` rows of 8 floats each, zero past column ``n``),
read through its batch and row strides in bytes (a matrix broadcast over the batch is packed
where it lies, with no copy first), and each group of
4 rows of A into a panel of ``k`` columns of 4 floats (zero past row ``m``). Each 4 x 8
block of C is then 8 f32x4 accumulators: per step along K two loads of the B panel, four
splats of the A panel, and 8 multiplies and 8 adds, all in registers (x86 has 16 of them,
which the block fills with two to spare). The packs make every load contiguous and every
edge a matter of zeros; only the stores of C's last rows and columns are guarded. The
scratch buffers hold ``4 * k`` (A) and ``8 * k * ceil(n / 8)`` (B) floats.
"""

from __future__ import annotations

from .assemble import Function

ROWS, COLUMNS = 4, 8
_PARAMS = tuple((name, "i32") for name in ("c", "a", "b", "batches", "m", "k", "n", "pack_a",
                                           "pack_b", "b_batch", "b_stride"))
_LOCALS = (*((name, "i32") for name in ("i", "j", "kk", "panels", "at", "from", "row", "col",
                                        "panel")),
           *((f"acc{q}", "v128") for q in range(ROWS * 2)), ("b0", "v128"), ("b1", "v128"),
           ("s", "v128"))


def _next_batch(b_step: str) -> str:
    """The end of one batch of either kernel: A, B and C move to the next matrices (B by
    `b_step`, instructions that leave its step in bytes on the stack)."""
    return f"""
      local.get $a local.get $m local.get $k i32.mul i32.const 4 i32.mul i32.add local.set $a
      local.get $b {b_step} i32.add local.set $b
      local.get $c local.get $m local.get $n i32.mul i32.const 4 i32.mul i32.add local.set $c
      local.get $batches i32.const 1 i32.sub local.set $batches
      br $batch"""


def _pack_b() -> str:
    """Panels of 8 columns of B: ``pack_b[(panel * k + kk) * 8 + c] = B[kk, panel * 8 + c]``,
    zero past column n."""
    return """
    i32.const 0 local.set $panel
    local.get $pack_b local.set $at
    block $b_done loop $b_panel
      local.get $panel local.get $panels i32.ge_u br_if $b_done
      local.get $panel i32.const 8 i32.mul local.set $col
      i32.const 0 local.set $kk
      local.get $b local.get $col i32.const 4 i32.mul i32.add local.set $from
      block $b_rows_done loop $b_row
        local.get $kk local.get $k i32.ge_u br_if $b_rows_done
        local.get $col i32.const 8 i32.add local.get $n i32.le_u
        if  ;; a whole panel row: two vectors
          local.get $at local.get $from v128.load align=4 v128.store
          local.get $at local.get $from v128.load offset=16 align=4 v128.store offset=16
        else  ;; the last panel: the columns that exist, then zeros
          local.get $at v128.const i32x4 0 0 0 0 v128.store
          local.get $at v128.const i32x4 0 0 0 0 v128.store offset=16
          i32.const 0 local.set $j
          block $cols_done loop $b_col
            local.get $col local.get $j i32.add local.get $n i32.ge_u br_if $cols_done
            local.get $at local.get $j i32.const 4 i32.mul i32.add
            local.get $from local.get $j i32.const 4 i32.mul i32.add f32.load
            f32.store
            local.get $j i32.const 1 i32.add local.set $j
            br $b_col
          end end
        end
        local.get $at i32.const 32 i32.add local.set $at
        local.get $from local.get $b_stride i32.add local.set $from
        local.get $kk i32.const 1 i32.add local.set $kk
        br $b_row
      end end
      local.get $panel i32.const 1 i32.add local.set $panel
      br $b_panel
    end end"""


def _pack_a() -> str:
    """The panel of rows i .. i+3 of A: ``pack_a[kk * 4 + r] = A[i + r, kk]``, zero past
    row m."""
    rows = []
    for r in range(ROWS):
        rows.append(f"""
      local.get $i i32.const {r} i32.add local.get $m i32.lt_u
      if  ;; row i + {r}
        local.get $a local.get $i i32.const {r} i32.add local.get $k i32.mul
        i32.const 4 i32.mul i32.add local.set $from
        local.get $pack_a i32.const {4 * r} i32.add local.set $at
        i32.const 0 local.set $kk
        block $a{r}_done loop $a{r}
          local.get $kk local.get $k i32.ge_u br_if $a{r}_done
          local.get $at local.get $from f32.load f32.store
          local.get $at i32.const 16 i32.add local.set $at
          local.get $from i32.const 4 i32.add local.set $from
          local.get $kk i32.const 1 i32.add local.set $kk
          br $a{r}
        end end
      else  ;; past the last row: zeros
        local.get $pack_a i32.const {4 * r} i32.add local.set $at
        i32.const 0 local.set $kk
        block $z{r}_done loop $z{r}
          local.get $kk local.get $k i32.ge_u br_if $z{r}_done
          local.get $at f32.const 0 f32.store
          local.get $at i32.const 16 i32.add local.set $at
          local.get $kk i32.const 1 i32.add local.set $kk
          br $z{r}
        end end
      end""")
    return "".join(rows)


def _block() -> str:
    """One 4 x 8 block of C, rows i.., columns panel * 8..: the K loop, then the stores."""
    zero = "".join(f"v128.const i32x4 0 0 0 0 local.set $acc{q} " for q in range(ROWS * 2))
    steps = "".join(f"""
          local.get $from v128.load32_splat offset={4 * r} local.set $s
          local.get $acc{2 * r} local.get $s local.get $b0 f32x4.mul f32x4.add local.set $acc{2 * r}
          local.get $acc{2 * r + 1} local.get $s local.get $b1 f32x4.mul f32x4.add
          local.set $acc{2 * r + 1}""" for r in range(ROWS))
    stores = []
    for r in range(ROWS):
        lanes = "".join(f"""
              local.get $col i32.const {q} i32.add local.get $n i32.lt_u
              if local.get $at local.get $acc{2 * r + q // 4} f32x4.extract_lane {q % 4}
                f32.store offset={4 * q} end""" for q in range(COLUMNS))
        stores.append(f"""
        local.get $i i32.const {r} i32.add local.get $m i32.lt_u
        if  ;; row i + {r} of C
          local.get $c local.get $i i32.const {r} i32.add local.get $n i32.mul
          local.get $col i32.add i32.const 4 i32.mul i32.add local.set $at
          local.get $col i32.const 8 i32.add local.get $n i32.le_u
          if
            local.get $at local.get $acc{2 * r} v128.store align=4
            local.get $at local.get $acc{2 * r + 1} v128.store offset=16 align=4
          else{lanes}
          end
        end""")
    return f"""
        {zero}
        local.get $pack_a local.set $from
        local.get $pack_b local.get $panel local.get $k i32.mul i32.const 32 i32.mul i32.add
        local.set $at
        local.get $k local.set $kk
        block $k_done loop $k_step
          local.get $kk i32.eqz br_if $k_done
          local.get $at v128.load local.set $b0
          local.get $at v128.load offset=16 local.set $b1{steps}
          local.get $at i32.const 32 i32.add local.set $at
          local.get $from i32.const 16 i32.add local.set $from
          local.get $kk i32.const 1 i32.sub local.set $kk
          br $k_step
        end end
        local.get $panel i32.const 8 i32.mul local.set $col{"".join(stores)}"""


def kernel() -> Function:
    """The exported ``matmul_f32``."""
    body = f"""
    local.get $n i32.const 7 i32.add i32.const 3 i32.shr_u local.set $panels
    block $batches_done loop $batch
      local.get $batches i32.eqz br_if $batches_done
      {_pack_b()}
      i32.const 0 local.set $i
      block $rows_done loop $row_panel
        local.get $i local.get $m i32.ge_u br_if $rows_done
        {_pack_a()}
        i32.const 0 local.set $panel
        block $panels_done loop $column_panel
          local.get $panel local.get $panels i32.ge_u br_if $panels_done
          {_block()}
          local.get $panel i32.const 1 i32.add local.set $panel
          br $column_panel
        end end
        local.get $i i32.const 4 i32.add local.set $i
        br $row_panel
      end end
      {_next_batch("local.get $b_batch")}
    end end"""
    return Function("matmul_f32", _PARAMS, body, locals=_LOCALS)


def nt_kernel() -> Function:
    """The exported ``matmul_nt_f32(c, a, b, batches, m, k, n, b_batch)``: ``C = A @ B^T``
    with B given as its ``n`` rows of ``k`` floats (a linear layer's weight as it is stored),
    each element of C the dot product of a row of A and a row of B, both read in order: eight
    floats a step into two f32x4 sums, then four, then one at a time. Nothing is packed, so
    a product with one row of A (a matrix times a vector) reads B once and nothing else; the
    packed kernel, which copies B into panels first, is the faster one from about a block of
    rows (`ROWS`) on. B moves by `b_batch` bytes between batches (0: one B for all)."""
    body = f"""
    block $batches_done loop $batch
      local.get $batches i32.eqz br_if $batches_done
      i32.const 0 local.set $i
      block $rows_done loop $row
        local.get $i local.get $m i32.ge_u br_if $rows_done
        i32.const 0 local.set $j
        block $columns_done loop $column
          local.get $j local.get $n i32.ge_u br_if $columns_done
          local.get $a local.get $i local.get $k i32.mul i32.const 4 i32.mul i32.add
          local.set $from
          local.get $b local.get $j local.get $k i32.mul i32.const 4 i32.mul i32.add
          local.set $at
          v128.const i32x4 0 0 0 0 local.tee $acc0 local.set $acc1
          i32.const 0 local.set $kk
          block $eights_done loop $eight
            local.get $kk i32.const 8 i32.add local.get $k i32.gt_u br_if $eights_done
            local.get $acc0 local.get $from v128.load align=4 local.get $at v128.load align=4
            f32x4.mul f32x4.add local.set $acc0
            local.get $acc1 local.get $from v128.load offset=16 align=4
            local.get $at v128.load offset=16 align=4 f32x4.mul f32x4.add local.set $acc1
            local.get $from i32.const 32 i32.add local.set $from
            local.get $at i32.const 32 i32.add local.set $at
            local.get $kk i32.const 8 i32.add local.set $kk
            br $eight
          end end
          local.get $kk i32.const 4 i32.add local.get $k i32.le_u
          if
            local.get $acc0 local.get $from v128.load align=4 local.get $at v128.load align=4
            f32x4.mul f32x4.add local.set $acc0
            local.get $from i32.const 16 i32.add local.set $from
            local.get $at i32.const 16 i32.add local.set $at
            local.get $kk i32.const 4 i32.add local.set $kk
          end
          local.get $acc0 local.get $acc1 f32x4.add local.tee $acc0 f32x4.extract_lane 0
          local.get $acc0 f32x4.extract_lane 1 f32.add
          local.get $acc0 f32x4.extract_lane 2 local.get $acc0 f32x4.extract_lane 3 f32.add
          f32.add local.set $sum
          block $tail_done loop $tail
            local.get $kk local.get $k i32.ge_u br_if $tail_done
            local.get $sum local.get $from f32.load local.get $at f32.load f32.mul f32.add
            local.set $sum
            local.get $from i32.const 4 i32.add local.set $from
            local.get $at i32.const 4 i32.add local.set $at
            local.get $kk i32.const 1 i32.add local.set $kk
            br $tail
          end end
          local.get $c local.get $i local.get $n i32.mul local.get $j i32.add
          i32.const 4 i32.mul i32.add local.get $sum f32.store
          local.get $j i32.const 1 i32.add local.set $j
          br $column
        end end
        local.get $i i32.const 1 i32.add local.set $i
        br $row
      end end
      {_next_batch("local.get $b_batch")}
    end end"""
    params = (*_PARAMS[:7], ("b_batch", "i32"))
    local_vars = (*((name, "i32") for name in ("i", "j", "kk", "from", "at")),
                  ("acc0", "v128"), ("acc1", "v128"), ("sum", "f32"))
    return Function("matmul_nt_f32", params, body, locals=local_vars)


def int_kernel() -> Function:
    """The exported ``matmul_i32(c, a, b, batches, m, k, n)``: int32 products that wrap,
    row by row of C: ``C[i, :] += A[i, kk] * B[kk, :]`` for each kk, four columns at a
    time."""
    body = f"""
    block $batches_done loop $batch
      local.get $batches i32.eqz br_if $batches_done
      local.get $c i32.const 0 local.get $m local.get $n i32.mul i32.const 4 i32.mul
      memory.fill
      i32.const 0 local.set $i
      block $rows_done loop $row
        local.get $i local.get $m i32.ge_u br_if $rows_done
        i32.const 0 local.set $kk
        block $k_done loop $k_step
          local.get $kk local.get $k i32.ge_u br_if $k_done
          local.get $a local.get $i local.get $k i32.mul local.get $kk i32.add
          i32.const 4 i32.mul i32.add i32.load local.set $scale
          local.get $scale i32x4.splat local.set $s
          local.get $c local.get $i local.get $n i32.mul i32.const 4 i32.mul i32.add
          local.set $to
          local.get $b local.get $kk local.get $n i32.mul i32.const 4 i32.mul i32.add
          local.set $from
          i32.const 0 local.set $j
          block $v_done loop $vector
            local.get $j i32.const 4 i32.add local.get $n i32.gt_u br_if $v_done
            local.get $to local.get $to v128.load align=4 local.get $from v128.load align=4
            local.get $s i32x4.mul i32x4.add v128.store align=4
            local.get $to i32.const 16 i32.add local.set $to
            local.get $from i32.const 16 i32.add local.set $from
            local.get $j i32.const 4 i32.add local.set $j
            br $vector
          end end
          block $t_done loop $tail
            local.get $j local.get $n i32.ge_u br_if $t_done
            local.get $to local.get $to i32.load local.get $from i32.load local.get $scale
            i32.mul i32.add i32.store
            local.get $to i32.const 4 i32.add local.set $to
            local.get $from i32.const 4 i32.add local.set $from
            local.get $j i32.const 1 i32.add local.set $j
            br $tail
          end end
          local.get $kk i32.const 1 i32.add local.set $kk
          br $k_step
        end end
        local.get $i i32.const 1 i32.add local.set $i
        br $row
      end end
      {_next_batch("local.get $k local.get $n i32.mul i32.const 4 i32.mul")}
    end end"""
    local_vars = (*((name, "i32") for name in ("i", "j", "kk", "scale", "to", "from")),
                  ("s", "v128"))
    return Function("matmul_i32", _PARAMS[:7], body, locals=local_vars)


def scratch_bytes(k: int, n: int) -> tuple[int, int]:
    """The bytes of the A and B packs of a product with inner size `k` and `n` columns."""
    return 4 * ROWS * k, 4 * COLUMNS * k * -(-n // COLUMNS)
