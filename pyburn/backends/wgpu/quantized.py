"""The "quant_matmul" capability for wgpu (contract: ``pyburn.ops.capability.quantized``):
``quant_matmul.wgsl``, one kernel for the weight-only product (f32) and the integer one
(i32), 4x4 outputs per invocation, the weights unpacked from their words with two shifts
per four fields as they are read.

The iteration space handed to `launch` is (M, N), the product's outputs: x binds its rows
(with a tail of one row's length), the packed words, scale and zero point their rows, so
`launch.boxes` cuts M and N when an operand is too large to bind. Each invocation walks the
words of its rows block by block; rows longer than the loop budget allows are walked in
pieces of words, later pieces adding to what the first stored.

WGSL's ``dot4I8Packed`` (the ``packed_4x8_integer_dot_product`` language feature) multiplies
two words of four signed 8-bit integers; the integer product's activations are uint8 minus a
zero point (9 bits), so they would not fit such words, and the fields are unpacked with
shifts instead (wgpu-py on llvmpipe announces no WGSL language features either).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import float32, int32
from .handle import GpuTensor
from .launch import Box, Gpu, Operand, loop_budget
from .templates import render
from .windows import unflipped

WORKGROUP = 64
#: the length of info: the kernel's constants up to its last operand's map
_INFO = 25


@dataclass(frozen=True)
class _Input:
    """An operand of the kernel: its name and element type in WGSL, where its map sits in
    info, the space dim (0: M, 1: N) it moves along, and its stride along its own row (the
    words of data, the blocks of a scale, x's K), or None for a vector (bias, x_zero)."""

    name: str
    element: str
    slot: int
    dim: int
    tensor: GpuTensor
    inner: int | None

    def operand(self, k_extent: int) -> Operand:
        """The tensor over (M, N), with the rest of its row as the tail."""
        t = self.tensor
        strides = (t.strides[0], 0) if self.dim == 0 else (0, t.strides[0])
        tail = 0 if self.inner is None else (k_extent - 1) * self.inner
        return Operand(t.storage, t.offset, strides, 4, tail)

    def meta(self, place: object) -> list[int]:
        """Its map in a box: offset, stride along its space dim, and along its row."""
        own = [place.offset, place.strides[self.dim]]  # type: ignore[attr-defined]
        return own if self.inner is None else own + [self.inner]

    def load4(self, base: str, block: str) -> str:
        """WGSL for its values at the four rows or columns `base`, at `block` of a row."""
        at = f"vec4<i32>(info[{self.slot}]) + {base} * info[{self.slot + 1}]"
        if self.inner is not None:
            at += f" + vec4<i32>({block} * info[{self.slot + 2}])"
        return (f"vec4<{self.element}>({self.name}[({at}).x], {self.name}[({at}).y], "
                f"{self.name}[({at}).z], {self.name}[({at}).w])")


def _indent(lines: list[str], spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in lines)


def _product(gpu: Gpu, x: GpuTensor, data: GpuTensor, scale: GpuTensor | None,
             zero: GpuTensor | None, extra: GpuTensor | None, bits: int, signed: bool,
             words_per_block: int, k: int) -> GpuTensor:
    """The kernel over (M, N): weight-only where `scale` is given (`extra`: the bias),
    integer otherwise (`extra`: the rows' zero point)."""
    floating = scale is not None
    t = "f32" if floating else "i32"
    x, data = unflipped(gpu, x), unflipped(gpu, data)
    out = gpu.empty((x.shape[0], data.shape[0]), float32 if floating else int32)
    if out.numel == 0:
        return out
    words = data.shape[1]
    inputs = [_Input("x", t, 11, 0, x, x.strides[1]), _Input("data", "i32", 14, 1, data,
                                                             data.strides[1])]
    optional = []
    for name, element, slot, dim, tensor in (("scale", "f32", 17, 1, scale),
                                             ("zero", "i32", 20, 1, zero),
                                             ("bias" if floating else "x_zero",
                                              t, 23, 1 if floating else 0, extra)):
        if tensor is not None:
            tensor = unflipped(gpu, tensor)
            optional.append(_Input(name, element, slot, dim, tensor,
                                   tensor.strides[1] if slot < 23 else None))
    inputs += optional
    by_name = {i.name: i for i in inputs}
    extents = {"x": k, "data": words, "scale": -(-words // words_per_block),
               "zero": -(-words // words_per_block)}
    operands = {1: Operand.of(out)}
    operands.update((key, i.operand(extents.get(i.name, 1)))
                    for key, i in enumerate(inputs, start=2))
    block = [f"let s = {by_name['scale'].load4('cols', 'b')};" if "scale" in by_name
             else f"let s = vec4<{t}>(1);",
             f"let z = vec4<{t}>({by_name['zero'].load4('cols', 'b')});" if "zero" in by_name
             else f"let z = vec4<{t}>(0);"]
    row_zero = f"let xz = {by_name['x_zero'].load4('rows', '')};" if "x_zero" in by_name \
        else f"let xz = vec4<{t}>(0);"
    bias = ["if (info[ADD] == 0) {", "    v += bias[info[EXTRA] + c * info[EXTRA + 1]];",
            "}"] if "bias" in by_name else []
    parts = []
    for part in range(32 // bits // 4):
        lefts = ", ".join(f"{32 - bits * (4 * part + i + 1)}u" for i in range(4))
        parts.append(f"part(&acc, words, vec4<u32>({lefts}), k + {4 * part}, x_rows, x_step, "
                     f"xz, s, z);")
    source = render(
        "quant_matmul", workgroup=WORKGROUP, T=t, field="i32" if signed else "u32",
        bits=bits, dequantize="(vec4<f32>(q) - z) * s" if floating else "q - z",
        bindings="\n".join(f"@group(0) @binding({key}) var<storage, read> {i.name}: "
                           f"array<{i.element}>;"
                           for key, i in enumerate(optional, start=4)),
        block=_indent(block, 8), row_zero=_indent([row_zero], 4), parts=_indent(parts, 12),
        bias=_indent(bias, 16))
    # an invocation loops over a piece's words and, around them, its blocks (at most one
    # block per word, each costing two more iterations)
    piece = loop_budget(3)

    def info(box: Box, start: int, stop: int) -> list[int]:
        meta = [0] * _INFO
        meta[:8] = [*box.extents, k, 32 // bits, start, stop, words_per_block,
                    int(start > 0)]
        meta[8:11] = box.operands[1].meta()
        for key, i in enumerate(inputs, start=2):
            values = i.meta(box.operands[key])
            meta[i.slot:i.slot + len(values)] = values
        return meta

    for box in gpu.launches(out.shape, operands):
        tiles = -(-box.extents[0] // 4) * -(-box.extents[1] // 4)
        for start in range(0, words, piece):
            gpu.dispatch(source, box, info(box, start, min(start + piece, words)),
                         -(-tiles // WORKGROUP))
    return out


def quant_linear(gpu: Gpu, x: GpuTensor, data: GpuTensor, scale: GpuTensor,
                 zero: GpuTensor | None, bits: int, signed: bool, block: int, k: int,
                 bias: GpuTensor | None) -> GpuTensor:
    """float32 ``x @ ((q - zero) * scale).T + bias``, dequantized as the words are read."""
    return _product(gpu, x, data, scale, zero, bias, bits, signed, block // (32 // bits), k)


def quant_matmul_int(gpu: Gpu, a: GpuTensor, a_zero: GpuTensor | None, data: GpuTensor,
                     zero: GpuTensor | None, bits: int, signed: bool, k: int) -> GpuTensor:
    """The exact int32 ``(a - a_zero) @ (q - zero).T``: one block per row."""
    return _product(gpu, a, data, None, zero, a_zero, bits, signed, data.shape[1], k)
