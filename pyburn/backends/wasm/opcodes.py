"""The WebAssembly instructions the kernels use, by their text-format names: each one's
encoding (its opcode bytes) and the kind of immediate it takes. The opcodes are those of
the WebAssembly 2.0 core specification, with fixed-width SIMD (the 0xFD prefix) and the
saturating truncations and bulk memory operations (the 0xFC prefix); the tests check every
entry against wabt's assembler.
"""

from __future__ import annotations

#: immediates: "" none, "local", "global", "label", "func", "memarg" (offset= align=),
#: "i32", "i64", "f32", "f64", "v128" (a shape and its lanes), "lane" (one lane number),
#: "lanes16" (i8x16.shuffle's sixteen), "memlane" (a memarg, then a lane), "block" (a
#: block type), "memory" (memory index 0),
#: "memory2" (memory.copy's two)

#: single-byte instructions: name -> (opcode, immediate)
CORE: dict[str, tuple[int, str]] = {
    "unreachable": (0x00, ""), "nop": (0x01, ""), "block": (0x02, "block"),
    "loop": (0x03, "block"), "if": (0x04, "block"), "else": (0x05, ""), "end": (0x0B, ""),
    "br": (0x0C, "label"), "br_if": (0x0D, "label"), "return": (0x0F, ""),
    "call": (0x10, "func"), "drop": (0x1A, ""), "select": (0x1B, ""),
    "local.get": (0x20, "local"), "local.set": (0x21, "local"), "local.tee": (0x22, "local"),
    "global.get": (0x23, "global"), "global.set": (0x24, "global"),
    "i32.load": (0x28, "memarg"), "i64.load": (0x29, "memarg"), "f32.load": (0x2A, "memarg"),
    "f64.load": (0x2B, "memarg"), "i32.load8_s": (0x2C, "memarg"),
    "i32.load8_u": (0x2D, "memarg"), "i32.load16_s": (0x2E, "memarg"),
    "i32.load16_u": (0x2F, "memarg"), "i32.store": (0x36, "memarg"),
    "i64.store": (0x37, "memarg"), "f32.store": (0x38, "memarg"),
    "f64.store": (0x39, "memarg"), "i32.store8": (0x3A, "memarg"),
    "i32.store16": (0x3B, "memarg"), "memory.size": (0x3F, "memory"),
    "memory.grow": (0x40, "memory"),
    "i32.const": (0x41, "i32"), "i64.const": (0x42, "i64"), "f32.const": (0x43, "f32"),
    "f64.const": (0x44, "f64"),
}
_NO_IMMEDIATE = [
    # 0x45 on, in order
    "i32.eqz", "i32.eq", "i32.ne", "i32.lt_s", "i32.lt_u", "i32.gt_s", "i32.gt_u", "i32.le_s",
    "i32.le_u", "i32.ge_s", "i32.ge_u",
    "i64.eqz", "i64.eq", "i64.ne", "i64.lt_s", "i64.lt_u", "i64.gt_s", "i64.gt_u", "i64.le_s",
    "i64.le_u", "i64.ge_s", "i64.ge_u",
    "f32.eq", "f32.ne", "f32.lt", "f32.gt", "f32.le", "f32.ge",
    "f64.eq", "f64.ne", "f64.lt", "f64.gt", "f64.le", "f64.ge",
    "i32.clz", "i32.ctz", "i32.popcnt", "i32.add", "i32.sub", "i32.mul", "i32.div_s",
    "i32.div_u", "i32.rem_s", "i32.rem_u", "i32.and", "i32.or", "i32.xor", "i32.shl",
    "i32.shr_s", "i32.shr_u", "i32.rotl", "i32.rotr",
    "i64.clz", "i64.ctz", "i64.popcnt", "i64.add", "i64.sub", "i64.mul", "i64.div_s",
    "i64.div_u", "i64.rem_s", "i64.rem_u", "i64.and", "i64.or", "i64.xor", "i64.shl",
    "i64.shr_s", "i64.shr_u", "i64.rotl", "i64.rotr",
    "f32.abs", "f32.neg", "f32.ceil", "f32.floor", "f32.trunc", "f32.nearest", "f32.sqrt",
    "f32.add", "f32.sub", "f32.mul", "f32.div", "f32.min", "f32.max", "f32.copysign",
    "f64.abs", "f64.neg", "f64.ceil", "f64.floor", "f64.trunc", "f64.nearest", "f64.sqrt",
    "f64.add", "f64.sub", "f64.mul", "f64.div", "f64.min", "f64.max", "f64.copysign",
    "i32.wrap_i64", "i32.trunc_f32_s", "i32.trunc_f32_u", "i32.trunc_f64_s",
    "i32.trunc_f64_u", "i64.extend_i32_s", "i64.extend_i32_u", "i64.trunc_f32_s",
    "i64.trunc_f32_u", "i64.trunc_f64_s", "i64.trunc_f64_u", "f32.convert_i32_s",
    "f32.convert_i32_u", "f32.convert_i64_s", "f32.convert_i64_u", "f32.demote_f64",
    "f64.convert_i32_s", "f64.convert_i32_u", "f64.convert_i64_s", "f64.convert_i64_u",
    "f64.promote_f32", "i32.reinterpret_f32", "i64.reinterpret_f64", "f32.reinterpret_i32",
    "f64.reinterpret_i64", "i32.extend8_s", "i32.extend16_s",
]
CORE.update({name: (0x45 + k, "") for k, name in enumerate(_NO_IMMEDIATE)})

#: 0xFC-prefixed instructions: name -> (opcode, immediate)
MISC: dict[str, tuple[int, str]] = {
    "i32.trunc_sat_f32_s": (0, ""), "i32.trunc_sat_f32_u": (1, ""),
    "i32.trunc_sat_f64_s": (2, ""), "i32.trunc_sat_f64_u": (3, ""),
    "i64.trunc_sat_f32_s": (4, ""), "i64.trunc_sat_f32_u": (5, ""),
    "i64.trunc_sat_f64_s": (6, ""), "i64.trunc_sat_f64_u": (7, ""),
    "memory.copy": (10, "memory2"), "memory.fill": (11, "memory"),
}

#: 0xFD-prefixed (SIMD) instructions: name -> (opcode, immediate)
SIMD: dict[str, tuple[int, str]] = {
    "v128.load": (0x00, "memarg"), "v128.load32_splat": (0x09, "memarg"),
    "v128.store": (0x0B, "memarg"), "v128.const": (0x0C, "v128"),
    "i8x16.shuffle": (0x0D, "lanes16"), "i8x16.swizzle": (0x0E, ""),
    "i8x16.splat": (0x0F, ""), "i16x8.splat": (0x10, ""), "i32x4.splat": (0x11, ""),
    "i64x2.splat": (0x12, ""), "f32x4.splat": (0x13, ""), "f64x2.splat": (0x14, ""),
    "i8x16.extract_lane_u": (0x16, "lane"), "i32x4.extract_lane": (0x1B, "lane"),
    "i32x4.replace_lane": (0x1C, "lane"), "f32x4.extract_lane": (0x1F, "lane"),
    "f32x4.replace_lane": (0x20, "lane"),
    "i8x16.eq": (0x23, ""), "i8x16.ne": (0x24, ""),
    "i32x4.eq": (0x37, ""), "i32x4.ne": (0x38, ""), "i32x4.lt_s": (0x39, ""),
    "i32x4.lt_u": (0x3A, ""), "i32x4.gt_s": (0x3B, ""), "i32x4.gt_u": (0x3C, ""),
    "i32x4.le_s": (0x3D, ""), "i32x4.le_u": (0x3E, ""), "i32x4.ge_s": (0x3F, ""),
    "i32x4.ge_u": (0x40, ""),
    "f32x4.eq": (0x41, ""), "f32x4.ne": (0x42, ""), "f32x4.lt": (0x43, ""),
    "f32x4.gt": (0x44, ""), "f32x4.le": (0x45, ""), "f32x4.ge": (0x46, ""),
    "v128.not": (0x4D, ""), "v128.and": (0x4E, ""), "v128.andnot": (0x4F, ""),
    "v128.or": (0x50, ""), "v128.xor": (0x51, ""), "v128.bitselect": (0x52, ""),
    "v128.any_true": (0x53, ""), "v128.store32_lane": (0x5A, "memlane"),
    "v128.store64_lane": (0x5B, "memlane"),
    "v128.load32_zero": (0x5C, "memarg"), "i8x16.bitmask": (0x64, ""),
    "i8x16.narrow_i16x8_u": (0x66, ""),
    "i16x8.narrow_i32x4_u": (0x86, ""), "i16x8.extend_low_i8x16_u": (0x89, ""),
    "i32x4.extend_low_i16x8_u": (0xA9, ""),
    # the quantized products (quantized.py): nibbles split, int8 lanes widened, dot products
    "i8x16.shl": (0x6B, ""), "i8x16.shr_s": (0x6C, ""), "i8x16.shr_u": (0x6D, ""),
    "i16x8.narrow_i32x4_s": (0x85, ""), "i16x8.extend_low_i8x16_s": (0x87, ""),
    "i16x8.extend_high_i8x16_s": (0x88, ""), "i16x8.extend_high_i8x16_u": (0x8A, ""),
    "i16x8.sub": (0x91, ""), "i32x4.extend_low_i16x8_s": (0xA7, ""),
    "i32x4.extend_high_i16x8_s": (0xA8, ""), "i32x4.extend_high_i16x8_u": (0xAA, ""),
    "i32x4.dot_i16x8_s": (0xBA, ""),
    "f32x4.ceil": (0x67, ""), "f32x4.floor": (0x68, ""), "f32x4.trunc": (0x69, ""),
    "f32x4.nearest": (0x6A, ""),
    "i32x4.abs": (0xA0, ""), "i32x4.neg": (0xA1, ""), "i32x4.all_true": (0xA3, ""),
    "i32x4.bitmask": (0xA4, ""), "i32x4.shl": (0xAB, ""), "i32x4.shr_s": (0xAC, ""),
    "i32x4.shr_u": (0xAD, ""), "i32x4.add": (0xAE, ""), "i32x4.sub": (0xB1, ""),
    "i32x4.mul": (0xB5, ""), "i32x4.min_s": (0xB6, ""), "i32x4.min_u": (0xB7, ""),
    "i32x4.max_s": (0xB8, ""), "i32x4.max_u": (0xB9, ""),
    "f32x4.abs": (0xE0, ""), "f32x4.neg": (0xE1, ""), "f32x4.sqrt": (0xE3, ""),
    "f32x4.add": (0xE4, ""), "f32x4.sub": (0xE5, ""), "f32x4.mul": (0xE6, ""),
    "f32x4.div": (0xE7, ""), "f32x4.min": (0xE8, ""), "f32x4.max": (0xE9, ""),
    "f32x4.pmin": (0xEA, ""), "f32x4.pmax": (0xEB, ""),
    "i32x4.trunc_sat_f32x4_s": (0xF8, ""), "i32x4.trunc_sat_f32x4_u": (0xF9, ""),
    "f32x4.convert_i32x4_s": (0xFA, ""), "f32x4.convert_i32x4_u": (0xFB, ""),
    # float64 lanes (mathlib's pow and its sin/cos/tan argument reduction for large x)
    "f32x4.demote_f64x2_zero": (0x5E, ""), "f64x2.promote_low_f32x4": (0x5F, ""),
    "f64x2.ceil": (0x74, ""), "f64x2.floor": (0x75, ""), "f64x2.trunc": (0x7A, ""),
    "f64x2.nearest": (0x94, ""),
    "i64x2.shl": (0xCB, ""), "i64x2.shr_s": (0xCC, ""), "i64x2.shr_u": (0xCD, ""),
    "i64x2.add": (0xCE, ""), "i64x2.sub": (0xD1, ""),
    "f64x2.abs": (0xEC, ""), "f64x2.neg": (0xED, ""), "f64x2.sqrt": (0xEF, ""),
    "f64x2.add": (0xF0, ""), "f64x2.sub": (0xF1, ""), "f64x2.mul": (0xF2, ""),
    "f64x2.div": (0xF3, ""), "f64x2.min": (0xF4, ""), "f64x2.max": (0xF5, ""),
}

#: the value types, by name, and their encodings
VALUE_TYPES = {"i32": 0x7F, "i64": 0x7E, "f32": 0x7D, "f64": 0x7C, "v128": 0x7B}
#: the natural alignment (log2 of bytes) of each memory instruction, its default align=
NATURAL_ALIGN = {"i32.load": 2, "i64.load": 3, "f32.load": 2, "f64.load": 3, "i32.load8_s": 0,
                 "i32.load8_u": 0, "i32.load16_s": 1, "i32.load16_u": 1, "i32.store": 2,
                 "i64.store": 3, "f32.store": 2, "f64.store": 3, "i32.store8": 0,
                 "i32.store16": 1, "v128.load": 4, "v128.store": 4, "v128.load32_splat": 2,
                 "v128.load32_zero": 2, "v128.store32_lane": 2, "v128.store64_lane": 3}
