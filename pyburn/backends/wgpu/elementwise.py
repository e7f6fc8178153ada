"""Elementwise kernels: unary and binary ops from the op table, where, cast and copies.

All of them are ``map.wgsl`` with a different value expression: the op table's WGSL column
(``pyburn.ops.elementwise``) evaluated in the compute type of the inputs, then stored in the
output's type (`kinds`). Operands are read through their strides, so broadcast (expanded)
and permuted inputs cost nothing extra; dims that every operand walks contiguously are
merged first (`coalesce`), so the index arithmetic is usually one division.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import chain

from ...dtypes import DType, bool_
from ...ops.elementwise import BINARY, UNARY, ElementwiseOp
from ..strided import coalesce
from .handle import GpuTensor
from .kinds import Kind
from .launch import Gpu, Operand
from .templates import fill, render

WORKGROUP = 256
#: points each invocation of a map kernel computes (see map.wgsl)
UNROLL = 4


@dataclass(frozen=True)
class Read:
    """One input of a map kernel: the value `name` read from `operand`, whose buffer holds
    `element`s; `load` turns ``{buf}[{at}]``-style text into the value (``{buf}`` is the
    buffer's name, ``{at}`` the point's offset in it)."""

    name: str
    operand: Operand
    element: str
    load: str = "{buf}[{at}]"

    @classmethod
    def of(cls, name: str, t: GpuTensor, raw: bool = False) -> Read:
        """Tensor `t` read as `name`: raw (its stored type) or in its compute type."""
        return cls(name, Operand.of(t), t.kind.storage,
                   "{buf}[{at}]" if raw else t.kind.load("{buf}[{at}]"))


#: the variable through which an epilogue reads the result of the kernel it is fused into
ANCHOR = "anchor"


@dataclass(frozen=True)
class Fragment:
    """Elementwise code run at every point of a kernel's iteration space: `reads` (inputs,
    each with strides over that space), `body` (statements over the reads' names) and
    `value` (the result: WGSL in the compute type). A map kernel stores one; a reduction
    folds one (its source); an epilogue computes one from the kernel's result (`ANCHOR`)."""

    reads: tuple[Read, ...] = ()
    body: str = ""
    value: str = ANCHOR


@dataclass(frozen=True)
class Epilogue:
    """What a reduction or matmul kernel does with its result (the variable `ANCHOR`,
    rounded as storing it would round it): computes `fragment` at every point of the
    result's space and stores it into the view `out`; also stores the result itself into
    `keep` when given (something else needs it), and each (view, value) of `also`: values
    the fragment computes on the way that something else needs too (WGSL of the stored
    element over the fragment's names). The reduction and matmul kernels and
    `apply_epilogue` store them; the convolution kernels take no `also`."""

    fragment: Fragment
    out: GpuTensor
    keep: GpuTensor | None = None
    also: tuple[tuple[GpuTensor, str], ...] = ()

    @classmethod
    def plain(cls, out: GpuTensor) -> Epilogue:
        """Store the result into `out` as it is."""
        return cls(Fragment(), out)

    def outputs(self) -> list[tuple[GpuTensor, str]]:
        """What it stores besides `out`, as (view, stored value): `keep`, then `also`."""
        kept = [(self.keep, self.keep.kind.store(ANCHOR))] if self.keep is not None else []
        return kept + list(self.also)


def declare(binding: int, name: str, element: str, writable: bool = False) -> str:
    """The WGSL declaration of a storage buffer of `element`s at `binding`."""
    access = "read_write" if writable else "read"
    return f"@group(0) @binding({binding}) var<storage, {access}> {name}: array<{element}>;"


def indent(text: str, spaces: int) -> str:
    """`text` with every non-empty line indented by `spaces`."""
    return "\n".join(" " * spaces + line if line else line for line in text.splitlines())


#: `at(i, k)` of map.wgsl: the general form; the one for a one-dim space (most calls, once
#: `coalesce` has merged contiguous dims), which needs no division; and the one where every
#: operand that moves is contiguous, which tells the shader compiler that neighbouring
#: points are neighbouring elements
_AT_GENERAL = """    let rank = info[1];
    let base = 2 + rank + k * (rank + 1);
    return info[base] + pb_strided(i, rank, 2, base + 1);"""
_AT_LINEAR = "    return info[3 + 2 * k] + i * info[4 + 2 * k];"
_AT_CONTIGUOUS = "    return info[3 + 2 * k] + i;"


def launch_map(gpu: Gpu, out: GpuTensor, inputs: Sequence[Read], value: str,
               body: str = "", also: Sequence[tuple[GpuTensor, str]] = ()) -> None:
    """Store `value` (WGSL over the inputs' names) into every element of the view `out`;
    `body` holds statements run between the loads and the store (fused kernels compute
    their intermediate values there), and `also` more (view, value) pairs of the same shape
    to store at every point (a fused kernel's intermediate values that are needed too)."""
    dims, strides = coalesce(out.shape, [t.strides for t in (out, *(t for t, _ in also))]
                             + [r.operand.strides for r in inputs])
    outputs = len(also) + 1
    operands = {k + 1: Operand(t.storage, t.offset, st, t.kind.itemsize)
                for k, (t, st) in enumerate(zip((out, *(t for t, _ in also)), strides))}
    decls = [declare(k + 1, f"out{k}", t.kind.storage, writable=True)
             for k, (t, _) in enumerate(also, start=1)]
    stores = [f"out{k}[at(i, {k})] = {v};" for k, (_, v) in enumerate(also, start=1)]
    uniforms, loads = [], []
    for k, (read, st) in enumerate(zip(inputs, strides[outputs:]), start=outputs):
        operands[k + 1] = replace(read.operand, strides=st)
        decls.append(declare(k + 1, f"in{k}", read.element))
        # the same element at every point: loaded once per invocation
        point = "0" if not any(st) else "i"
        (uniforms if point == "0" else loads).append(
            f"let {read.name} = {read.load.format(buf=f'in{k}', at=f'at({point}, {k})')};")
    if len(dims) != 1:
        at = _AT_GENERAL
    else:  # (uniform inputs are read at point 0, where any stride does)
        at = _AT_CONTIGUOUS if all(st in ((0,), (1,)) for st in strides) else _AT_LINEAR
    source = render("map", workgroup=WORKGROUP, unroll=UNROLL, out_type=out.kind.storage,
                    inputs="\n".join(decls), at=at,
                    uniforms=indent("\n".join(uniforms), 4),
                    loads=indent("\n".join([*loads, body, *stores]), 12), value=value)

    def meta(box) -> list[int]:
        return [box.size, len(dims), *box.extents,
                *chain.from_iterable(box.operands[k].meta() for k in sorted(box.operands))]

    gpu.run(source, dims, operands, meta, lambda box: -(-box.size // (WORKGROUP * UNROLL)))


def apply_epilogue(gpu: Gpu, tail: Epilogue, result: GpuTensor) -> GpuTensor:
    """Finish a kernel that could not apply its epilogue itself (its result was added up
    from pieces): store `result` into ``tail.keep`` when given, and the epilogue over it into
    ``tail.out`` with a map kernel. Returns ``tail.out``."""
    if tail.keep is not None:
        copy_into(gpu, tail.keep, result)
    launch_map(gpu, tail.out, [Read.of(ANCHOR, result), *tail.fragment.reads],
               tail.out.kind.store(tail.fragment.value), tail.fragment.body, tail.also)
    return tail.out


def expression(entry: ElementwiseOp, kind: Kind) -> str:
    """The op's WGSL expression in `kind`'s compute type."""
    return fill(entry.wgsl, {"T": kind.compute}, strict=False)


def _stored(entry: ElementwiseOp, out: Kind, expr: str) -> str:
    return out.store_truth(expr) if entry.returns_bool else out.store(expr)


def unary(gpu: Gpu, op: str, x: GpuTensor, out: DType) -> GpuTensor:
    """Apply ``UNARY[op]`` elementwise."""
    entry = UNARY[op]
    result = gpu.empty(x.shape, out)
    value = _stored(entry, result.kind, expression(entry, x.kind))
    launch_map(gpu, result, [Read.of("x", x)], value)
    return result


def binary(gpu: Gpu, op: str, a: GpuTensor, b: GpuTensor, out: DType) -> GpuTensor:
    """Apply ``BINARY[op]`` elementwise to two tensors of one shape and dtype."""
    entry = BINARY[op]
    result = gpu.empty(a.shape, out)
    launch_map(gpu, result, [Read.of("a", a), Read.of("b", b)],
               _stored(entry, result.kind, expression(entry, a.kind)))
    return result


def where(gpu: Gpu, cond: GpuTensor, a: GpuTensor, b: GpuTensor) -> GpuTensor:
    """``a`` where `cond`, else ``b`` (stored values are selected, never converted)."""
    result = gpu.empty(a.shape, a.dtype)
    inputs = [Read.of("c", cond, raw=True), Read.of("a", a, raw=True), Read.of("b", b, raw=True)]
    launch_map(gpu, result, inputs, "select(b, a, c != 0u)")
    return result


def _conversion(source: Kind, target: Kind) -> str:
    """WGSL turning `x` (in the source's compute type) into the target's compute type, or a
    WGSL bool for a bool target."""
    if target.dtype is bool_:
        return f"pb_truth_{source.compute}(x)"
    floating = source.compute == "f32"
    if target.compute == "f32":
        return "x" if floating else "f32(x)"
    if floating:
        return "pb_f32_to_i32(x)" if target.compute == "i32" else "u32(pb_f32_to_i32(x))"
    return f"{target.compute}(x)"


def cast(gpu: Gpu, x: GpuTensor, dtype: DType) -> GpuTensor:
    """Convert to `dtype`: floats truncate toward zero into ints (NaN and inf give 0, big
    values wrap), ints wrap into narrower ints, anything nonzero is True."""
    if dtype is x.dtype:
        return x
    result = gpu.empty(x.shape, dtype)
    target = result.kind
    converted = _conversion(x.kind, target)
    value = target.store_truth(converted) if dtype is bool_ else target.store(converted)
    launch_map(gpu, result, [Read.of("x", x)], value)
    return result


def copy_into(gpu: Gpu, out: GpuTensor, x: GpuTensor) -> None:
    """Write the elements of `x` into the view `out` (same shape and dtype)."""
    launch_map(gpu, out, [Read.of("x", x, raw=True)], "x")


def contiguous(gpu: Gpu, x: GpuTensor) -> GpuTensor:
    """`x` itself if its elements are in row-major order, else a contiguous copy."""
    if x.is_contiguous():
        return x
    result = gpu.empty(x.shape, x.dtype)
    copy_into(gpu, result, x)
    return result

