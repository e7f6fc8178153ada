"""The "quant_matmul" capability on wasm (contract: ``pyburn.ops.capability.quantized``):
products with packed int8/int4 weights as WebAssembly SIMD kernels, one per weight type
(int8, uint8, int4, uint4) and product (float32 weight-only, exact int32).

Both kernels walk the weight a tile of `TILE` rows at a time. A tile is unpacked into a
scratch buffer first: 16 packed bytes (one v128: four words) at a time, and a word at a
time at the end of a block or a row; 4-bit fields are split into nibbles with i8x16 shifts
(``shl 4`` then ``shr_s 4`` sign-extends a low nibble, ``shr_s 4`` a high one; ``and 15`` and
``shr_u 4`` for unsigned ones) and put back in order with one ``i8x16.shuffle``; the int8
lanes are widened with ``i16x8.extend_*_i8x16`` and then

- weight-only (``quant_linear_<type>``): ``i32x4.extend_*_i16x8``, ``f32x4.convert_i32x4_s``,
  minus the block's zero point, times its scale: the float32 weights ``(q - zero) * scale``,
  a row of ``words * per_word`` floats each;
- integer (``quant_matmul_int_<type>``): minus the row's zero point in i16 lanes (``q - zero``
  lies within [-255, 255]), a row of ``ceil(k / 8) * 8`` int16 each; x's rows ``a - a_zero``
  are narrowed to int16 rows of that length once per call (zeros past k).

Then every group of `ROWS` rows of x (the last rows one at a time) times every pair of the
tile's rows: 4 x 2 (or 1 x 2) dot products over k in v128 accumulators (``f32x4.mul`` and
``f32x4.add``; ``i32x4.dot_i16x8_s`` and ``i32x4.add``), summed across lanes at the end, plus
the bias. A tile is unpacked once for all the rows of x, so the unpacking costs a pass over
the packed weight, and the products as much as a float32 product's; only `TILE` rows are
ever unpacked at a time (a few KiB to tens of KiB). The float kernel reads x's last
``k % 4`` elements of a row one at a time (never past a row's end); the padding after k in
a tile row (``(0 - zero) * scale``) is never read. The integer kernel's rows are padded
with zeros in x's copy, so whatever the tile holds after k adds nothing.

Exactness of the integer product: each product of two values within [-255, 255] is at most
65,025, ``dot_i16x8_s`` adds two (exact in int32), and the sums wrap as int32 does, so the
result equals the true integer modulo 2^32: exact whenever the product fits in int32, which
any k up to 33,025 guarantees (255 * 255 * 33,025 < 2^31); the cpu backend's products are
exact for every k the same way.

Nothing is read or written outside the buffers: x's rows, the weight's words, scale and
zero point within their views (per tensor and per channel ones are expanded views: their
strides, 0 included, are the kernel's arguments), the output, and the scratch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...dtypes import DType, float32, int32
from .assemble import Function
from .rows import _bump, _loop

if TYPE_CHECKING:
    from .backend import WasmBackend, WasmTensor

#: rows of x one step of the products reads (then one at a time), and rows of the tile: 8
#: accumulators, 11 vectors live, within x86-64's 16 registers (measured on wasmtime, 64 x
#: 1024 @ 1024 x 1024 int8: 4 x 2 3.7 ms, 2 x 4 3.5-3.6, 2 x 2 4.1; 4 x 3 5.6 and 4 x 4 8.1,
#: registers spilled, as it seems; 4 x 2 with the k loop unrolled twice 4.8; the integer
#: product 2.4 ms at 4 x 2, its best of these)
ROWS, COLUMNS = 4, 2
#: weight rows unpacked at a time (16 rows of 1024 floats: 64 KiB; 4 to 64 measured alike)
TILE = 16
#: each type's (bits, signed), by the name its kernels carry
TYPES = {"int8": (8, True), "uint8": (8, False), "int4": (4, True), "uint4": (4, False)}
#: the kernels' names, before their type's: weight-only, integer
PRODUCTS = ("quant_linear", "quant_matmul_int")
#: i8x16.shuffle's lanes that interleave low nibbles (even elements) and high ones (odd):
#: the first 16 elements, then the next 16
_INTERLEAVE = tuple(" ".join(f"{b} {b + 16}" for b in range(start, start + 8))
                    for start in (0, 8))


def type_name(bits: int, signed: bool) -> str:
    """The kernels' name for a weight type.

    >>> type_name(8, True), type_name(4, False)
    ('int8', 'uint4')
    """
    return f"{'' if signed else 'u'}int{bits}"


class _Kernel:
    """One kernel's text: `floating` (weight-only) or integer, for `bits`-bit fields."""

    def __init__(self, floating: bool, bits: int, signed: bool):
        self.floating, self.bits, self.signed = floating, bits, signed
        self.per_word = 32 // bits
        self.su = "s" if signed else "u"
        #: bytes of one unpacked value in a tile row
        self.size = 4 if floating else 2

    # ---- unpacking -----------------------------------------------------------------------
    def _stores(self, values: int, at: int) -> str:
        """The first `values` (4, 8 or 16) int8 lanes of $v unpacked to $dst + `at`."""
        out = []
        for half in range(-(-values // 8)):
            widen = f"local.get $v i16x8.extend_{('low', 'high')[half]}_i8x16_{self.su}"
            if not self.floating:
                store = "v128.store64_lane" if values == 4 else "v128.store"
                out.append(f"local.get $dst {widen} local.get $z i16x8.sub "
                           f"{store} offset={at + 16 * half}{' 0' if values == 4 else ''}")
                continue
            out.append(f"{widen} local.set $h")
            for quarter in range(min(2, values // 4 - 2 * half)):
                out.append(f"local.get $dst local.get $h "
                           f"i32x4.extend_{('low', 'high')[quarter]}_i16x8_{self.su} "
                           "f32x4.convert_i32x4_s local.get $z f32x4.sub local.get $s "
                           f"f32x4.mul v128.store offset={at + 16 * (2 * half + quarter)}")
        return "\n".join(out)

    def _fields(self, load: str, words: int) -> str:
        """`words` (4 or 1) packed words loaded by `load` unpacked to $dst."""
        if self.bits == 8:
            return f"{load} local.set $v\n{self._stores(4 * words, 0)}"
        low = ("i32.const 4 i8x16.shl i32.const 4 i8x16.shr_s" if self.signed
               else "v128.const i32x4 0x0F0F0F0F 0x0F0F0F0F 0x0F0F0F0F 0x0F0F0F0F v128.and")
        high = f"i32.const 4 i8x16.shr_{self.su}"
        out = [f"{load} local.tee $v {low} local.set $lo local.get $v {high} local.set $hi"]
        for part in range(-(-words // 2)):  # 16 fields a part
            out.append(f"local.get $lo local.get $hi i8x16.shuffle {_INTERLEAVE[part]} "
                       f"local.set $v\n{self._stores(min(16, 8 * words), 16 * self.size * part)}")
        return "\n".join(out)

    def _block_params(self) -> str:
        """$s and $z: the scale and zero point at $sp and $zp, in every lane."""
        if self.floating:
            zero = "local.get $zp i32.load f32.convert_i32_s f32x4.splat local.set $z"
            scale = "local.get $sp f32.load f32x4.splat local.set $s"
        else:
            zero, scale = "local.get $zp i32.load i16x8.splat local.set $z", ""
        return f"{scale} v128.const i32x4 0 0 0 0 local.set $z local.get $zero if {zero} end"

    def _unpack_row(self) -> str:
        """Words $src of a weight row into the tile row $dst, block by block."""
        quad, word = 4 * self.per_word * self.size, self.per_word * self.size
        quads = _loop("quads", "local.get $w i32.const 4 i32.add local.get $end i32.gt_u", f"""
            {self._fields("local.get $src v128.load align=4", 4)}
            {_bump("src", "i32.const 16")} {_bump("dst", f"i32.const {quad}")}
            {_bump("w", "i32.const 4")}""")
        words = _loop("words", "local.get $w local.get $end i32.ge_u", f"""
            {self._fields("local.get $src v128.load32_zero", 1)}
            {_bump("src", "i32.const 4")} {_bump("dst", f"i32.const {word}")}
            {_bump("w", "i32.const 1")}""")
        steps = (f"{_bump('sp', 'local.get $scale_col')} " if self.floating else "") + \
            _bump("zp", "local.get $zero_col")
        return "i32.const 0 local.set $w\n" + _loop(
            "blocks", "local.get $w local.get $words i32.ge_u", f"""
            {self._block_params()}
            local.get $w local.get $block_words i32.add local.tee $end local.get $words
            i32.gt_u if local.get $words local.set $end end
            {quads}
            {words}
            {steps}""")

    def _unpack_tile(self) -> str:
        """The tile's $rows weight rows from row $j0 into the scratch."""
        scale = "" if not self.floating else """
            local.get $scale local.get $j0 local.get $r i32.add local.get $scale_row i32.mul
            i32.add local.set $sp"""
        return "i32.const 0 local.set $r\n" + _loop("unpack", "local.get $r local.get $rows "
                                                    "i32.ge_u", f"""
            local.get $data local.get $j0 local.get $r i32.add local.get $words i32.mul
            i32.const 4 i32.mul i32.add local.set $src
            local.get $scratch local.get $r local.get $row_bytes i32.mul i32.add local.set $dst
            {scale}
            local.get $zero local.get $j0 local.get $r i32.add local.get $zero_row i32.mul
            i32.add local.set $zp
            {self._unpack_row()}
            {_bump("r", "i32.const 1")}""")

    # ---- x's rows as int16 (the integer product) -----------------------------------------
    def _pack_x(self) -> str:
        """``x - x_zero`` of every row narrowed to int16 rows of $row_bytes at $pack, zeros
        past k."""
        vectors = _loop("pack8", "local.get $o i32.const 8 i32.add local.get $k i32.gt_u", """
            local.get $dst local.get $src v128.load align=4 local.get $z i32x4.sub
            local.get $src v128.load offset=16 align=4 local.get $z i32x4.sub
            i16x8.narrow_i32x4_s v128.store
            local.get $src i32.const 32 i32.add local.set $src
            local.get $dst i32.const 16 i32.add local.set $dst
            local.get $o i32.const 8 i32.add local.set $o""")
        tail = _loop("pack1", "local.get $o local.get $row_bytes i32.const 1 i32.shr_u "
                              "i32.ge_u", """
            i32.const 0 local.set $q
            local.get $o local.get $k i32.lt_u
            if local.get $src i32.load local.get $z i32x4.extract_lane 0 i32.sub local.set $q
            end
            local.get $dst local.get $q i32.store16
            local.get $src i32.const 4 i32.add local.set $src
            local.get $dst i32.const 2 i32.add local.set $dst
            local.get $o i32.const 1 i32.add local.set $o""")
        return "i32.const 0 local.set $i\n" + _loop("pack", "local.get $i local.get $m "
                                                    "i32.ge_u", f"""
            v128.const i32x4 0 0 0 0 local.set $z
            local.get $x_zero
            if
              local.get $x_zero local.get $i local.get $x_zero_row i32.mul i32.add i32.load
              i32x4.splat local.set $z
            end
            local.get $x local.get $i local.get $k i32.mul i32.const 4 i32.mul i32.add
            local.set $src
            local.get $pack local.get $i local.get $row_bytes i32.mul i32.add local.set $dst
            i32.const 0 local.set $o
            {vectors}
            {tail}
            {_bump("i", "i32.const 1")}""")

    # ---- products ------------------------------------------------------------------------
    def _dots(self, rows: int) -> str:
        """`rows` rows of x from row $i times the `COLUMNS` tile rows from $jj (past the
        tile's last row, that row again, its results then not stored)."""
        lanes = "f32x4" if self.floating else "i32x4"
        scalar = "f32" if self.floating else "i32"
        source = "$x" if self.floating else "$pack"
        length = "local.get $k i32.const 4 i32.mul" if self.floating else "local.get $row_bytes"
        columns = range(COLUMNS)
        pairs = [(r, c) for r in range(rows) for c in columns]

        def present(c: int, then: str) -> str:
            """`then` where tile row $jj + c exists."""
            return (then if c == 0 else f"local.get $jj i32.const {c} i32.add local.get $rows "
                                        f"i32.lt_u if {then} end")
        out = [f"local.get {source} local.get $i i32.const {r} i32.add {length} i32.mul "
               f"i32.add local.set $x{r}" for r in range(rows)]
        out.append("local.get $scratch local.get $jj local.get $row_bytes i32.mul i32.add "
                   "local.set $w0")
        out += [f"local.get $w{c - 1} local.set $w{c} " + present(
            c, f"local.get $w{c} local.get $row_bytes i32.add local.set $w{c}")
            for c in columns[1:]]
        out += [f"v128.const i32x4 0 0 0 0 local.set $acc{r}{c}" for r, c in pairs]
        multiply = "f32x4.mul f32x4.add" if self.floating else "i32x4.dot_i16x8_s i32x4.add"
        step = [f"local.get $w{c} local.get $o i32.add v128.load local.set $v{c}"
                for c in columns]
        for r in range(rows):
            step.append(f"local.get $x{r} local.get $o i32.add v128.load align=4 local.set $t")
            step += [f"local.get $acc{r}{c} local.get $t local.get $v{c} {multiply} "
                     f"local.set $acc{r}{c}" for c in columns]
        # the floats' whole vectors (k & ~3 elements); the integers' rows are padded
        vector_end = ("local.get $k i32.const -4 i32.and i32.const 4 i32.mul" if self.floating
                      else "local.get $row_bytes")
        out.append(f"i32.const 0 local.set $o {vector_end} local.set $end")
        out.append(_loop("dot", "local.get $o local.get $end i32.ge_u",
                         "\n".join(step) + "\n" + _bump("o", "i32.const 16")))
        for r, c in pairs:
            acc = f"$acc{r}{c}"
            out.append(f"local.get {acc} {lanes}.extract_lane 0 local.get {acc} "
                       f"{lanes}.extract_lane 1 {scalar}.add local.get {acc} "
                       f"{lanes}.extract_lane 2 local.get {acc} {lanes}.extract_lane 3 "
                       f"{scalar}.add {scalar}.add local.set $sum{r}{c}")
        if self.floating:  # x's last k % 4 elements, one at a time; then the bias
            tail = [f"local.get $w{c} local.get $o i32.add f32.load local.set $f{c}"
                    for c in columns]
            for r in range(rows):
                tail.append(f"local.get $x{r} local.get $o i32.add f32.load local.set $e")
                tail += [f"local.get $sum{r}{c} local.get $e local.get $f{c} f32.mul f32.add "
                         f"local.set $sum{r}{c}" for c in columns]
            out.append(_loop("tail", "local.get $o local.get $k i32.const 4 i32.mul i32.ge_u",
                             "\n".join(tail) + "\n" + _bump("o", "i32.const 4")))
            add = " ".join(f"local.get $sum{r}{c} local.get $f{c} f32.add local.set $sum{r}{c}"
                           for r, c in pairs)
            loads = " ".join(present(c, f"local.get $o f32.load offset={4 * c} local.set $f{c}")
                             for c in columns)
            out.append("local.get $bias if local.get $bias local.get $j0 local.get $jj i32.add "
                       f"i32.const 4 i32.mul i32.add local.set $o {loads} {add} end")
        out += [present(c, f"local.get $out local.get $i i32.const {r} i32.add local.get $n "
                           "i32.mul local.get $j0 i32.add local.get $jj i32.add i32.const 4 "
                           f"i32.mul i32.add local.get $sum{r}{c} {scalar}.store "
                           f"offset={4 * c}") for r, c in pairs]
        return "\n".join(out)

    def _products(self) -> str:
        """Every row of x times the tile: groups of `ROWS` rows, then one at a time."""
        def over_columns(rows: int) -> str:
            return "i32.const 0 local.set $jj\n" + _loop(
                f"columns{rows}", "local.get $jj local.get $rows i32.ge_u",
                self._dots(rows) + "\n" + _bump("jj", f"i32.const {COLUMNS}"))
        return "i32.const 0 local.set $i\n" + "\n".join(_loop(
            f"rows{rows}", f"local.get $i i32.const {rows} i32.add local.get $m i32.gt_u",
            over_columns(rows) + "\n" + _bump("i", f"i32.const {rows}"))
            for rows in (ROWS, 1))

    def function(self) -> Function:
        """The exported kernel."""
        name = f"{PRODUCTS[0] if self.floating else PRODUCTS[1]}_" + \
            type_name(self.bits, self.signed)
        common = ("out", "x", "data", "m", "n", "k", "words", "block_words")
        own = (("scale", "scale_row", "scale_col", "zero", "zero_row", "zero_col", "bias")
               if self.floating else ("zero", "zero_row", "zero_col", "x_zero", "x_zero_row",
                                      "pack"))
        params = tuple((p, "i32") for p in (*common, *own, "scratch", "tile", "row_bytes"))
        pairs = [f"{r}{c}" for r in range(ROWS) for c in range(COLUMNS)]
        ints = ["j0", "rows", "r", "i", "jj", "w", "end", "src", "dst", "zp", "o",
                *(f"x{r}" for r in range(ROWS)), *(f"w{c}" for c in range(COLUMNS)),
                "sp" if self.floating else "q"]
        vectors = ["v", "h", "lo", "hi", "s", "z", "t", *(f"v{c}" for c in range(COLUMNS)),
                   *(f"acc{p}" for p in pairs)]
        scalar = "f32" if self.floating else "i32"
        sums = [(f"sum{p}", scalar) for p in pairs]
        extra = [("e", "f32"), *((f"f{c}", "f32") for c in range(COLUMNS))] \
            if self.floating else []
        body = f"""
        {"" if self.floating else self._pack_x()}
        i32.const 0 local.set $j0
        """ + _loop("tiles", "local.get $j0 local.get $n i32.ge_u", f"""
            local.get $n local.get $j0 i32.sub local.tee $rows local.get $tile i32.gt_u
            if local.get $tile local.set $rows end
            {self._unpack_tile()}
            {self._products()}
            {_bump("j0", "local.get $tile")}""")
        local_vars = (*((v, "i32") for v in ints), *((v, "v128") for v in vectors), *sums,
                      *extra)
        return Function(name, params, body, locals=local_vars)


def kernel(name: str) -> Function:
    """The kernel called `name`: one of `PRODUCTS`, an underscore and one of `TYPES`
    (``quant_linear_int4``, ``quant_matmul_int_uint8``)."""
    product, _, weights = name.rpartition("_")
    return _Kernel(product == PRODUCTS[0], *TYPES[weights]).function()


def kernels() -> list[Function]:
    """Both products for every weight type."""
    return [kernel(f"{product}_{weights}") for product in PRODUCTS for weights in TYPES]


def _param(b: WasmBackend, t: WasmTensor) -> tuple[int, int, int]:
    """A (rows, blocks) parameter view as (address, row stride, block stride) in bytes:
    read in place (an expanded view's stride is 0), or copied first where a stride is
    negative (a flipped view)."""
    if min(t.strides) < 0:
        t = b.contiguous(t)
    return t.address, t.strides[0] * t.size, t.strides[1] * t.size


def _row_bytes(floating: bool, k: int, words: int, bits: int) -> int:
    """The bytes of one unpacked tile row: every field of the words as float32; int16 up to
    k rounded up to 8 (a whole number of i16x8 vectors)."""
    return 4 * words * (32 // bits) if floating else 2 * (-(-k // 8) * 8)


def _operands(b: WasmBackend, x: WasmTensor, data: WasmTensor, dtype: DType, k: int,
              bits: int) -> tuple[WasmTensor, WasmTensor, int, WasmTensor, int, int]:
    """A product's contiguous operands, its words per weight row, its (empty) (m, n) output
    of `dtype` (float32: the weight-only product, int32: the integer one), and its
    scratch's layout: the bytes of an unpacked row and the rows of a tile."""
    x, data = b.contiguous(x), b.contiguous(data)
    m, (n, words) = x.shape[0], data.shape
    row_bytes = _row_bytes(dtype is float32, k, words, bits)
    return x, data, words, b.empty((m, n), dtype), row_bytes, min(TILE, n)


def quant_linear(b: WasmBackend, x: WasmTensor, data: WasmTensor, scale: WasmTensor,
                 zero: WasmTensor | None, bits: int, signed: bool, block: int, k: int,
                 bias: WasmTensor | None) -> WasmTensor:
    """float32 ``x @ ((q - zero) * scale).T + bias``: one call of ``quant_linear_<type>``."""
    x, data, words, out, row_bytes, tile = _operands(b, x, data, float32, k, bits)
    if not out.numel:
        return out
    m, n = out.shape
    scratch = b.pool.allocate(tile * row_bytes)
    zero_params = (0, 0, 0) if zero is None else _param(b, zero)
    bias_at = 0 if bias is None else b.contiguous(bias).address
    b.capability_kernel(f"{PRODUCTS[0]}_{type_name(bits, signed)}")(
        out.address, x.address, data.address, m, n, k, words, block // (32 // bits),
        *_param(b, scale), *zero_params, bias_at, scratch.buffer, tile, row_bytes)
    return out


def quant_matmul_int(b: WasmBackend, a: WasmTensor, a_zero: WasmTensor | None,
                     data: WasmTensor, zero: WasmTensor | None, bits: int, signed: bool,
                     k: int) -> WasmTensor:
    """The exact int32 ``(a - a_zero) @ (q - zero).T``: one call of
    ``quant_matmul_int_<type>`` (a zero point per row of the weight)."""
    a, data, words, out, row_bytes, tile = _operands(b, a, data, int32, k, bits)
    if not out.numel:
        return out
    m, n = out.shape
    scratch, pack = b.pool.allocate(tile * row_bytes), b.pool.allocate(m * row_bytes)
    zero_params = (0, 0, 0) if zero is None else _param(b, zero)
    a_zero_at, a_zero_row = (0, 0) if a_zero is None else _param(b, a_zero)[:2]
    b.capability_kernel(f"{PRODUCTS[1]}_{type_name(bits, signed)}")(
        out.address, a.address, data.address, m, n, k, words, words, *zero_params, a_zero_at,
        a_zero_row, pack.buffer, scratch.buffer, tile, row_bytes)
    return out
