"""Fusion on wasm: a chain of elementwise ops becomes one generated WebAssembly function,
compiled once per structure and cached.

`WasmFusion` is the shared recorder (`pyburn.backends.fusion.LazyBackend`) over a
`WasmBackend`: unary, binary, where and cast, and the expand and reshape views of pending
tensors, are recorded; a pending tensor is computed by one kernel when something needs it
(`materialize`). Reductions, matmul and the capabilities run on the wrapped backend, with
computed inputs. A Python number in an expression (a `full`) is recorded too, with no
buffer: the kernel takes it as an argument, so ``x * 0.5 + 1`` is one call, not three.

A kernel (`_MapWalk`, `_kernel`) runs over the root's shape with its dims merged where every
input allows (`_layout`): rows of the innermost merged dim, the outer dims counted by an
odometer that moves each input's row address by its strides. Along a row an input is read
four elements at a time, contiguous (one ``v128.load``), broadcast (one element splatted
at the row's start) or strided (four loads into lanes); the last ``n % 4`` of a row go one
at a time through the same code. Each step is the op table's ``wasm`` text on the step's
lanes (`elementwise.expression`), its value rounded as storing it would round it (uint8
and bool keep their low byte), so a fused chain computes what the same ops compute one
kernel at a time. Besides the root, a kernel stores the steps a live handle holds
(`plan.held_stored`).

The code depends on the graph's structure (steps, dtypes, which inputs are read how, the
number of outer dims), never on its values, shapes or strides, which are the call's
arguments: a training loop compiles each kernel once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ...dtypes import DType, bool_, float32
from ...ops.elementwise import BINARY, UNARY
from ..fusion import plan
from ..fusion.lazy import CONSTANTS, FULL, LazyTensor, Node
from ..fusion.plan import Chain, CodeCache, Walk, held_first, held_stored, largest_pending
from ..fusion.recorder import LazyBackend
from ..strided import Shape, coalesce
from . import elementwise
from .assemble import Function, Module
from .backend import WasmBackend, WasmTensor, f32_bits
from .engine import Engine, Export
from .kinds import KINDS, Kind

#: the most outputs one kernel stores (the root and the held steps), and inputs it reads
MAX_STORED, MAX_INPUTS = 8, 24
#: elementwise results smaller than this run unfused: a kernel call from Pyodide costs about
#: what recording and planning a step does, so fusion pays only past this size (measured in
#: docs/wasm.md's "Fusion")
EAGER_BELOW = 1 << 17

_BYTE_MASK = "v128.const i32x4 255 255 255 255 v128.and"
_ONES = "v128.const i32x4 1 1 1 1 v128.and"
_NONZERO = "v128.const i32x4 0 0 0 0 i32x4.ne"
#: a float to the integer it converts to, wrapped to 32 bits as the cast kernels convert it
#: (exact through i64 below 2**63 in magnitude, else 0)
_F_TO_I = ("local.tee $f i64.trunc_sat_f32_s i32.wrap_i64 i32.const 0 local.get $f f32.abs "
           "f32.const 9223372036854775808 f32.lt select")


def _cast(source: DType, target: DType) -> str:
    """Lanes of `source` (on the stack) as lanes of `target`."""
    if target is float32:
        return "f32x4.convert_i32x4_s"
    if source is float32 and target is bool_:
        return f"v128.const f32x4 0 0 0 0 f32x4.ne {_ONES}"
    if source is float32:  # lane by lane, exactly as the cast kernels
        lanes = " ".join(f"local.get $c f32x4.extract_lane {k} {_F_TO_I} "
                         f"i32x4.replace_lane {k}" for k in range(4))
        convert = f"local.set $c v128.const i32x4 0 0 0 0 {lanes}"
        return f"{convert} {_BYTE_MASK}" if target.itemsize == 1 else convert
    if target is bool_:
        return f"{_NONZERO} {_ONES}"
    return _BYTE_MASK if target.itemsize == 1 and source.itemsize == 4 else ""


def _rounded(code: str, out: Kind, returns_bool: bool) -> str:
    """A step's value rounded as storing it in `out` would (one byte: the low one)."""
    return f"{code} {_BYTE_MASK}" if out.size == 1 and not returns_bool else code


def _step(t: LazyTensor, names: list[str]) -> str:
    """The code leaving step `t`'s lanes on the stack, from its arguments' locals."""
    node = t.computed_by
    out = KINDS[t.dtype]
    if node.kind == "where":
        c, a, b = names
        return f"local.get ${a} local.get ${b} local.get ${c} {_NONZERO} v128.bitselect"
    if node.kind == "cast":
        return f"local.get ${names[0]} {_cast(node.args[0].dtype, t.dtype)}"
    entry = (UNARY if node.kind == "unary" else BINARY)[node.op]
    binds = ("x",) if node.kind == "unary" else ("a", "b")
    lets = " ".join(f"local.get ${n} local.set ${p}" for p, n in zip(binds, names))
    code = elementwise.expression(entry, KINDS[node.args[0].dtype])
    return _rounded(f"{lets} {code}", out, entry.returns_bool)


class _MapWalk(Walk):
    """A map kernel's walk: its inputs (computed tensors, with their strides in the root's
    space), its numbers (`FULL` leaves) and its steps (each step's code is written only
    when the kernel is not in the cache: `lines`)."""

    def __init__(self, shape: Shape):
        super().__init__(shape, "")
        self.numbers: list[tuple[DType, float | int | bool]] = []
        self.steps_done: list[tuple[str, LazyTensor, list[str]]] = []

    def lines(self) -> list[tuple[str, str]]:
        """Each step's variable and the code computing it."""
        return [(var, _step(t, names)) for var, t, names in self.steps_done]

    def read(self, value: WasmTensor, chain: Chain) -> str:
        return f"r{self.input(value, chain)[0]}"

    def full(self, t: LazyTensor) -> str:
        self.numbers.append((t.dtype, t.computed_by.params[0]))
        return f"k{len(self.numbers) - 1}"

    def emit(self, var: str, t: LazyTensor, names: list[str]) -> None:
        self.steps_done.append((var, t, names))
        node = t.computed_by
        self.signature.append((node.kind, node.op, t.dtype.name, *names))


#: how a kernel reads an input along a row: one element for the row, contiguous, strided
SPLAT, CONTIGUOUS, STRIDED = "s", "c", "d"


def _layout(shape: Shape, strides: list[Shape]) -> tuple[Shape, list[Shape]]:
    """The dims of `shape` merged where every read allows (`strided.coalesce`), innermost
    last: (sizes, each read's strides over them), at least one dim."""
    sizes, merged = coalesce(shape, strides)
    if not sizes:
        return (1,), [(0,) for _ in strides]
    return sizes, merged


def _mode(inner: int) -> str:
    return SPLAT if inner == 0 else CONTIGUOUS if inner == 1 else STRIDED


def _kernel(walk: _MapWalk, lines: list[tuple[str, str]], stores: list[tuple[str, DType]],
            modes: list[str], outer: int) -> Function:
    """The kernel ``fused(out.., r.., k.., size_d.., stride_r_d.., step_r.., n)``: `stores`
    (variables, dtypes) written contiguous, reads `r<k>` read per `modes`, numbers `k<j>`,
    over `outer` outer dims of the given sizes, each read's row address moving by its
    strides (bytes), a strided read's elements `step_r` bytes apart along a row; `lines`
    are the steps' variables and code."""
    reads = [(f"r{k}", KINDS[v.dtype], mode)
             for k, ((v, _), mode) in enumerate(zip(walk.reads, modes))]
    outs = [(f"o{j}", KINDS[dtype], var) for j, (var, dtype) in enumerate(stores)]
    numbers = [(f"k{j}", KINDS[dtype]) for j, (dtype, _) in enumerate(walk.numbers)]
    dims = range(outer)
    params = [*((f"p_{o}", "i32") for o, _, _ in outs), *((f"p_{r}", "i32") for r, _, _ in reads),
              *((f"n_{k}", "i32") for k, _ in numbers), *((f"size{d}", "i32") for d in dims),
              *((f"st_{r}_{d}", "i32") for r, _, _ in reads for d in dims),
              *((f"step_{r}", "i32") for r, _, mode in reads if mode == STRIDED), ("n", "i32")]
    walking = [(r, kind, mode) for r, kind, mode in reads if mode != SPLAT]

    def loads(width: int) -> list[str]:
        code = []
        for r, kind, mode in walking:
            if mode == CONTIGUOUS:
                code.append(f"local.get $q_{r} {kind.load4 if width == 4 else kind.load1} "
                            f"local.set ${r}")
                continue
            lanes = [f"local.get $q_{r} {kind.load1}"]
            for k in range(1, width):
                scalar = "f32.load" if kind.dtype is float32 else \
                    "i32.load" if kind.size == 4 else "i32.load8_u"
                lanes.append(f"local.get $q_{r} local.get $step_{r} i32.const {k} i32.mul "
                             f"i32.add {scalar} {kind.lanes}.replace_lane {k}")
            code.append(" ".join(lanes) + f" local.set ${r}")
        return code

    def advance(width: int) -> list[str]:
        code = [f"local.get $q_{o} i32.const {width * kind.size} i32.add local.set $q_{o}"
                for o, kind, _ in outs]
        for r, kind, mode in walking:
            step = (f"i32.const {width * kind.size}" if mode == CONTIGUOUS else
                    f"local.get $step_{r} i32.const {width} i32.mul")
            code.append(f"local.get $q_{r} {step} i32.add local.set $q_{r}")
        return code

    def loop(width: int, label: str) -> str:
        count = "i32.const -4 i32.and" if width == 4 else "i32.const 3 i32.and"
        first = outs[0]
        stores_code = [f"local.get $q_{o} local.get ${var} "
                       f"{kind.store4 if width == 4 else kind.store1}" for o, kind, var in outs]
        return "\n".join([
            f"local.get $n {count} i32.const {first[1].size} i32.mul local.get $q_{first[0]} "
            "i32.add local.set $end",
            f"block ${label}_done loop ${label}",
            f"  local.get $q_{first[0]} local.get $end i32.ge_u br_if ${label}_done",
            *("  " + line for line in loads(width)),
            *(f"  {code} local.set ${var}" for var, code in lines),
            *("  " + line for line in stores_code),
            *("  " + line for line in advance(width)),
            f"  br ${label}",
            "end end"])

    row_start = [*(f"local.get $p_{o} local.set $q_{o}" for o, _, _ in outs),
                 *(f"local.get $p_{r} {kind.splat} local.set ${r}" if mode == SPLAT else
                   f"local.get $p_{r} local.set $q_{r}" for r, kind, mode in reads)]
    # after a row: the outputs move on by the row; the innermost outer dim's counter up by
    # one and each read's row address by its stride there; a counter that reaches its size
    # goes back to 0 (the addresses back by size * stride) and carries into the next one out
    next_row = [f"local.get $p_{o} local.get $n i32.const {kind.size} i32.mul i32.add "
                f"local.set $p_{o}" for o, kind, _ in outs]
    for d in reversed(dims):
        next_row.append(f"local.get $c{d} i32.const 1 i32.add local.set $c{d}")
        next_row.extend(f"local.get $p_{r} local.get $st_{r}_{d} i32.add local.set $p_{r}"
                        for r, _, _ in reads)
        next_row.append(f"local.get $c{d} local.get $size{d} i32.lt_u br_if $row")
        next_row.append(f"i32.const 0 local.set $c{d}")
        next_row.extend(f"local.get $p_{r} local.get $st_{r}_{d} local.get $size{d} i32.mul "
                        f"i32.sub local.set $p_{r}" for r, _, _ in reads)
    body = "\n".join([
        *(f"local.get $n_{k} i32x4.splat local.set ${k}" for k, _ in numbers),
        "block $rows_done loop $row",
        *row_start,
        loop(4, "vector"),
        loop(1, "tail"),
        *next_row,
        "end end"])
    local_vars = (*((r, "v128") for r, _, _ in reads), *((k, "v128") for k, _ in numbers),
                  *((var, "v128") for var, _ in lines),
                  *((f"q_{o}", "i32") for o, _, _ in outs),
                  *((f"q_{r}", "i32") for r, _, _ in walking),
                  *((f"c{d}", "i32") for d in dims),
                  ("x", "v128"), ("a", "v128"), ("b", "v128"), ("c", "v128"), ("t", "v128"),
                  ("f", "f32"), ("end", "i32"))
    return Function("fused", tuple(params), body, locals=local_vars)


class WasmFusion(LazyBackend):
    """The wasm backend with chains of elementwise ops fused into generated kernels."""

    max_reads = MAX_INPUTS
    eager_below = EAGER_BELOW
    inner: WasmBackend

    def __init__(self, inner: WasmBackend):
        super().__init__(inner)
        self._code = CodeCache()

    @property
    def engine(self) -> Engine:
        """The wrapped backend's engine (its memory)."""
        return self.inner.engine

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Any:
        """A number everywhere, recorded with no buffer: a kernel reading it takes it as an
        argument; computed (filled) only if something else needs it."""
        node = Node(FULL, "", (), 0, frozenset((CONSTANTS,)), params=(value,))
        return self._handle(LazyTensor(shape, dtype, node=node))

    def materialize(self, t: LazyTensor) -> WasmTensor:
        """Compute pending `t` with one kernel (after what it needs computed first)."""
        return plan.materialize(t, self._plan)

    def _plan(self, root: LazyTensor) -> Callable[[], None]:
        """The launch computing `root` (and the held steps it stores), or `plan.First`."""
        node = root.computed_by
        if node.kind == FULL:
            return lambda: root.resolve(self.inner.full(root.shape, node.params[0], root.dtype))
        walk = _MapWalk(root.shape)
        value = walk.visit(root)
        stored = held_stored(walk, root, walk.inside.values())[:MAX_STORED - 1]
        held_first(walk, (root, *stored))
        if len(walk.reads) > MAX_INPUTS:
            raise plan.First(largest_pending(root))
        return lambda: self._launch(root, walk, value, stored)

    def _launch(self, root: LazyTensor, walk: _MapWalk, value: str,
                stored: list[LazyTensor]) -> None:
        b = self.inner
        outs = [root, *stored]
        results = [b.empty(t.shape, t.dtype) for t in outs]
        if math.prod(root.shape):
            sizes, strides = _layout(root.shape, [s for _, s in walk.reads])
            modes = [_mode(s[-1]) for s in strides]
            variables = [value, *(walk.done[(id(t), ())] for t in stored)]
            stores = [(v, t.dtype) for v, t in zip(variables, outs)]
            run = self._compiled(walk, stores, modes, len(sizes) - 1)
            size_of = [KINDS[v.dtype].size for v, _ in walk.reads]
            run(*(r.address for r in results), *(v.address for v, _ in walk.reads),
                *(_number(dtype, x) for dtype, x in walk.numbers), *sizes[:-1],
                *(s * size for st, size in zip(strides, size_of) for s in st[:-1]),
                *(st[-1] * size for st, size, mode in zip(strides, size_of, modes)
                  if mode == STRIDED), sizes[-1])
        for t, result in zip(outs, results):
            t.resolve(result)

    def _compiled(self, walk: _MapWalk, stores: list[tuple[str, DType]], modes: list[str],
                  outer: int) -> Export:
        """The kernel's export, compiled once per structure."""
        signature = ("map", *walk.signature, tuple((v, d.name) for v, d in stores),
                     tuple((v.dtype.name, m) for (v, _), m in zip(walk.reads, modes)),
                     tuple(d.name for d, _ in walk.numbers), outer)

        def make() -> Export:
            lines = walk.lines()
            function = _kernel(walk, lines, stores, modes, outer)
            code = " ".join(line for _, line in lines)
            exports = self.inner.engine.instantiate(
                Module([function, *elementwise.library(code)]).binary())
            return exports["fused"]
        return self._code.get(signature, make)[0]


def _number(dtype: DType, value: float | int | bool) -> int:
    """A `FULL` leaf's value as the kernel's i32 argument: a float32's bits, an integer."""
    return f32_bits(float(value)) if dtype is float32 else int(value)
