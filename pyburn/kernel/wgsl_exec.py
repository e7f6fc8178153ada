"""The WGSL executor: a kernel's IR (`ir.py`) as one WGSL compute shader, run on the tensors'
wgpu device through its `GpuRuntime` (natively and in the browser alike).

The shader of a kernel and a workgroup size is generated once (`shader`; `STATS` counts
them) and looks like this::

    @group(0) @binding(0) var<storage, read> info: array<i32>;        // see below
    @group(0) @binding(1) var<storage, read_write> t_out: array<f32>;  // a written tensor
    @group(0) @binding(2) var<storage, read> t_x: array<f32>;          // a read one
    var<workgroup> s_tile: array<f32, 256>;                            // a shared array

    @compute @workgroup_size(16, 16, 1)
    fn main(@builtin(global_invocation_id) gid: vec3<u32>, ...) {
        let v_n = info[0];        // the scalar parameters the body reads
        let c0 = bitcast<f32>(info[4]);  // 0.5: the f32 constants
        let o_x = info[2];        // where each bound tensor starts in its binding
        let d_x_0 = info[3];      // the sizes the body reads (x.shape[0])
        var v_i: f32;             // every local variable, declared once at the top
        ...                       // the body
    }

- ``info`` holds one run of i32 words per runtime parameter, in parameter order: a
  scalar's value (an f32's or a u32's bits), or a tensor's element offset followed by its
  sizes (what ``t.shape[k]`` reads); then the bits of the kernel's f32 constants, each
  read once into a ``let`` (``c0``, ...): written as literals, they would let a driver
  fold ``x * 0.0`` to ``0.0``, as llvmpipe does, infinities, NaN and signs of zero
  notwithstanding. Integer and bool constants are literals.
- Only the tensors the body reads or writes get a binding (1, 2, ... in parameter order): a
  pipeline's automatic layout leaves out the ones it never uses. Tensors updated atomically
  are ``array<atomic<i32>>``, and so are shared arrays used with atomics (their plain loads
  and stores become ``atomicLoad`` and ``atomicStore``).
- Shared arrays are zeroed at the start, then a barrier: WGSL zeroes workgroup memory,
  but not every driver does (see `Codegen.zero_shared`).
- Names are mangled so that no user name can clash with a WGSL keyword or with the
  shader's own: ``v_`` scalars, ``t_`` tensors, ``s_`` shared arrays, ``p_`` an
  invocation's own arrays (``var`` in the function: zeros). Every other name is
  the shader's: ``info``, the builtins, ``c`` constants, ``o_`` offsets, ``d_`` sizes,
  ``e`` temporaries, ``sg_`` and ``r`` of subgroups, and the ``lo``, ``hi``, ``n``, ``k``
  and ``z`` of loops.
- Operations are the op table's WGSL (`pyburn.ops.elementwise`), the column whose Python
  the interpreter runs, and casts are the tensor casts' (`elementwise._conversion`), with
  `templates.link` appending the ``pb_`` helpers they call. An operand that a template
  repeats is computed once, into a ``let``. An integer ``//`` or ``%`` by a constant power
  of two is a shift or a mask (`_power_of_two`). Subexpressions whose operands are all
  constants are evaluated here, by the interpreter itself (WGSL rejects constant
  expressions that overflow, such as ``2147483647i + 1i``).
- A subgroup reduction is WGSL's (``subgroupAdd``, ...) where the device has the
  ``subgroups`` feature and the workgroup is 1-d (`shader`), its positions read from the
  ``subgroup_size`` built-in; otherwise it is emulated on subgroups of
  ``ir.SUBGROUP_SIZE``: each invocation's value goes to a shared array (``sg_f32``, ...),
  and after a barrier each invocation combines its subgroup's, in lane order, as the
  interpreter does (``r`` names the result).
- ``for`` loops count their iterations in a u32 (computed once, Python's range rules, any
  step), so a loop never overflows its variable; ``while`` is a ``loop`` that breaks.
- ``barrier()`` is ``workgroupBarrier()``, after a ``storageBarrier()`` when the kernel
  reads a tensor that it writes (the IR's barrier also orders tensor writes; a barrier is
  costly on a CPU driver, so it is left out where nothing could see the order).

A launch copies every written tensor's starting contents into a new buffer (the arguments
never change), makes the read tensors contiguous, and dispatches the grid as it is: a grid,
workgroup or shared memory beyond the adapter's limits is a `KernelError`, never split.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._tensor import Tensor, wrap
from ..backends.base import Backend
from ..backends.wgpu.backend import WgpuBackend
from ..backends.wgpu.elementwise import _conversion, contiguous, copy_into
from ..backends.wgpu.handle import GpuTensor
from ..backends.wgpu.kinds import KINDS, Kind
from ..backends.wgpu.launch import Gpu
from ..backends.wgpu.runtime import Binding, Limits
from ..backends.wgpu.templates import fill, link
from ..backends.wgpu.templates import source as template_source
from ..dtypes import float32, int32, uint8
from ..ops import elementwise as elementwise_table
from ..ops.elementwise import BINARY, UNARY
from . import cache, interpret, ir
from .ir import KernelError

if TYPE_CHECKING:
    from ..backends.wgpu.fusion import FusionBackend

Dims = tuple[int, int, int]

#: the WGSL kind of each scalar type, for `_conversion` (which reads only a kind's compute
#: type: uint8's is u32)
_KINDS: dict[ir.Type, Kind] = {ir.F32: KINDS[float32], ir.I32: KINDS[int32],
                               ir.U32: KINDS[uint8]}
#: the entry point's builtin of each `ir.Position`
_BUILTINS = {"global": "gid", "local": "lid", "group": "wid", "groups": "nwg"}
_ENTRY = """@compute @workgroup_size({x}, {y}, {z})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lix: u32{more}) {{"""
#: the entry point's subgroup builtin, where the adapter has subgroups
_SUBGROUP_BUILTINS = """,
        @builtin(subgroup_size) sgs: u32"""
#: the subgroup positions: on the adapter's subgroups, and on those of ir.SUBGROUP_SIZE
_HARDWARE_POSITIONS = {"subgroup_size": "i32(sgs)", "subgroup_lane": "i32(lix % sgs)",
                       "subgroup_id": "i32(lix / sgs)"}
_EMULATED_POSITIONS = {"subgroup_lane": f"i32(lix % {ir.SUBGROUP_SIZE}u)",
                       "subgroup_id": f"i32(lix / {ir.SUBGROUP_SIZE}u)"}
#: the WGSL built-in of each subgroup reduction
_REDUCTIONS = {"add": "subgroupAdd", "maximum": "subgroupMax", "minimum": "subgroupMin"}
#: how the bits of a scalar parameter's word in `info` become its value
_FROM_WORD = {ir.F32: "bitcast<f32>({})", ir.I32: "{}", ir.U32: "bitcast<u32>({})"}
#: the WGSL operators of the logical operations and comparisons of bools (the table's take
#: numbers)
_LOGICAL = {"logical_and": "&&", "logical_or": "||", "eq": "==", "ne": "!="}


@dataclass
class WgslStats:
    """What the WGSL executor did: shaders generated (one per kernel IR and workgroup size),
    shaders found on disk (generated by an earlier process) and kernels launched."""

    generated: int = 0
    from_disk: int = 0
    launches: int = 0


#: the executor's counters (tests read them)
STATS = WgslStats()


@dataclass(frozen=True)
class Shader:
    """A kernel's WGSL, and what a launch binds: `tensors`, the tensor parameters bound (to
    bindings 1, 2, ... in this order), whether binding 0 (``info``) is used, and the words
    that end it: the bits of the kernel's f32 constants."""

    source: str
    tensors: tuple[str, ...]
    uses_info: bool
    constants: tuple[int, ...]


def _width(param: ir.Param) -> int:
    """How many words of ``info`` a runtime parameter takes."""
    return 1 + param.ndim if param.tensor else 1


def info_slots(kernel: ir.Kernel) -> dict[str, int]:
    """Where each runtime parameter's words start in ``info``: a scalar's value, or a
    tensor's element offset followed by its sizes (the f32 constants follow them)."""
    slots, at = {}, 0
    for param in kernel.params:
        slots[param.name] = at
        at += _width(param)
    return slots


def f32_bits(value: float) -> int:
    """The bits of `value` rounded to float32, as an i32."""
    return struct.unpack("<i", struct.pack("<f", interpret.to_f32(value)))[0]


def _tree(node: ir.Expr | ir.Stmt) -> Iterator[ir.Expr | ir.Stmt]:
    """`node` and every expression and statement under it."""
    yield node
    for f in fields(node):  # type: ignore[arg-type]
        value = getattr(node, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, (ir.Expr, ir.Stmt)):
                yield from _tree(item)


def _nodes(kernel: ir.Kernel) -> Iterator[ir.Expr | ir.Stmt]:
    """Every expression and statement of the kernel's body."""
    for stmt in kernel.body:
        yield from _tree(stmt)


def literal(c: ir.Const) -> str:
    """The WGSL literal of a bool or integer constant, wrapped to its type as the
    interpreter wraps it."""
    if c.type is ir.BOOL:
        return "true" if c.value else "false"
    value = interpret.wrap(int(c.value), c.type)
    if c.type is ir.U32:
        return f"{value}u"
    if value == -(1 << 31):  # 2147483648i is out of range: negate an abstract int
        return f"i32({value})"
    return f"({value}i)" if value < 0 else f"{value}i"


def _f32_text(bits: int) -> str:
    """The float32 of `bits`, as Python writes it (for a comment)."""
    return repr(struct.unpack("<f", struct.pack("<i", bits))[0])


class Codegen:
    """The WGSL of one kernel for one workgroup size, on the adapter's subgroups where
    `subgroups`, else on subgroups of ``ir.SUBGROUP_SIZE`` made of shared memory."""

    def __init__(self, kernel: ir.Kernel, group: Dims, subgroups: bool = False):
        self.kernel = kernel
        self.group = group
        self.subgroups = subgroups
        #: the scalar types the emulated reductions exchange through a shared array
        self.scratch: set[ir.Type] = set()
        self.slots = info_slots(kernel)
        self.reference = interpret.Compiler(kernel, {})  # evaluates constant expressions
        self.shared = {a.name for a in kernel.shared}
        self.arrays = {a.name for a in kernel.arrays}
        self.nodes = list(_nodes(kernel))
        self.lines: list[str] = []
        self.depth = 1
        self.names = count()  # temporaries and loop counters
        self.uses_info = False
        self.constants: dict[int, str] = {}  # an f32 constant's bits -> the let holding it
        self.sizes: set[tuple[str, int]] = set()  # the (tensor, axis) sizes the body reads
        #: whether the body reads a tensor it writes (what another invocation may have written)
        self.reads_written = any(isinstance(n, ir.Load) and n.memory in kernel.written
                                 for n in self.nodes)

    # ---- the shader ------------------------------------------------------------------
    def shader(self) -> Shader:
        """Generate the shader (once per `Codegen`)."""
        nodes = self.nodes
        accessed = {n.memory for n in nodes if isinstance(n, (ir.Load, ir.Store, ir.Atomic))}
        bound = tuple(p.name for p in self.kernel.params if p.name in accessed)
        self.block(self.kernel.body)
        body, self.lines = self.lines, []
        read = {n.name for n in nodes if isinstance(n, ir.Var)}
        for param in self.kernel.params:
            if not param.tensor and param.name in read:
                word = _FROM_WORD[param.type].format(self.info(self.slots[param.name]))
                self.line(f"let v_{param.name} = {word};")
        end = sum(_width(p) for p in self.kernel.params)
        for k, (bits, name) in enumerate(self.constants.items()):
            self.line(f"let {name} = bitcast<f32>({self.info(end + k)});  // {_f32_text(bits)}")
        for name in bound:
            self.line(f"let o_{name} = {self.info(self.slots[name])};")
        for name, axis in sorted(self.sizes):
            self.line(f"let d_{name}_{axis} = {self.info(self.slots[name] + 1 + axis)};")
        for name, kind in self.locals(nodes).items():
            self.line(f"var v_{name}: {kind.name};")
        for a in self.kernel.arrays:  # zeros, as every function variable starts
            self.line(f"var p_{a.name}: array<{a.type.name}, {a.size}>;")
        self.zero_shared()
        head = [f"// kernel {self.kernel.name}, generated by pyburn.kernel.wgsl"]
        if self.uses_info:
            head.append("@group(0) @binding(0) var<storage, read> info: array<i32>;")
        head += [self.binding(k, name) for k, name in enumerate(bound, start=1)]
        head += [f"var<workgroup> s_{a.name}: array<{self.element(a.name, a.type)}, {a.size}>;"
                 for a in self.kernel.shared]
        invocations = math.prod(self.group)
        head += [f"var<workgroup> sg_{kind.name}: array<{kind.name}, {invocations}>;"
                 for kind in sorted(self.scratch, key=str)]
        x, y, z = self.group
        uses = self.subgroups and any(isinstance(n, ir.Subgroup) or (
            isinstance(n, ir.Position) and n.what in _HARDWARE_POSITIONS) for n in nodes)
        entry = _ENTRY.format(x=x, y=y, z=z, more=_SUBGROUP_BUILTINS if uses else "")
        text = "\n".join([*head, "", entry, *self.lines, *body, "}"])
        return Shader(link(text + "\n"), bound, self.uses_info, tuple(self.constants))

    def zero_shared(self) -> None:
        """Zero the shared arrays, each invocation a share, and wait for all of them: WGSL
        zeroes workgroup memory, but Mesa's llvmpipe (22.3, through wgpu) leaves in it what
        an earlier shader wrote, and the interpreter's shared arrays start at zero."""
        if not self.kernel.shared:
            return
        invocations = math.prod(self.group)
        for a in self.kernel.shared:
            zero = f"{a.type.name}()"
            store = f"atomicStore(&s_{a.name}[z], {zero})" if a.name in self.kernel.atomics \
                else f"s_{a.name}[z] = {zero}"
            self.line(f"for (var z = lix; z < {a.size}u; z += {invocations}u) {{ {store}; }}")
        self.line("workgroupBarrier();")

    def locals(self, nodes: list[ir.Expr | ir.Stmt]) -> dict[str, ir.Type]:
        """The kernel's local variables (assigned or looped over) and their types."""
        found: dict[str, ir.Type] = {}
        for node in nodes:
            if isinstance(node, (ir.Assign, ir.Subgroup)):
                found.setdefault(node.name, node.value.type)
            elif isinstance(node, ir.For):
                found.setdefault(node.var, ir.I32)
        return found

    def binding(self, k: int, name: str) -> str:
        """The declaration of tensor parameter `name` at binding `k`."""
        access = "read_write" if name in self.kernel.written else "read"
        element = self.element(name, self.kernel.param(name).type)
        return f"@group(0) @binding({k}) var<storage, {access}> t_{name}: array<{element}>;"

    def element(self, memory: str, kind: ir.Type) -> str:
        """The element type of a tensor or shared array: atomic where it is used so."""
        return f"atomic<{kind.name}>" if memory in self.kernel.atomics else kind.name

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def info(self, slot: int) -> str:
        self.uses_info = True
        return f"info[{slot}]"

    def temporary(self, prefix: str, value: str) -> str:
        """A new ``let`` holding `value`, named with `prefix`."""
        name = f"{prefix}{next(self.names)}"
        self.line(f"let {name} = {value};")
        return name

    # ---- statements ------------------------------------------------------------------
    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for stmt in stmts:
            self.stmt(stmt)

    def stmt(self, st: ir.Stmt) -> None:
        if isinstance(st, ir.Assign):
            self.line(f"v_{st.name} = {self.value(st.value)};")
        elif isinstance(st, ir.Store):
            where, value = self.element_ref(st.memory, st.index), self.value(st.value)
            if st.memory in self.kernel.atomics:
                self.line(f"atomicStore(&{where}, {value});")
            else:
                self.line(f"{where} = {value};")
        elif isinstance(st, ir.Atomic):
            where, value = self.element_ref(st.memory, st.index), self.value(st.value)
            self.line(f"atomic{st.op.capitalize()}(&{where}, {value});")
        elif isinstance(st, ir.If):
            self.line(f"if {self.value(st.cond)} {{")
            self.nested(st.then)
            if st.orelse:
                self.line("} else {")
                self.nested(st.orelse)
            self.line("}")
        elif isinstance(st, ir.For):
            self.loop(st)
        elif isinstance(st, ir.While):
            self.line("loop {")
            self.depth += 1
            self.line(f"if !{self.value(st.cond)} {{ break; }}")
            self.block(st.body)
            self.depth -= 1
            self.line("}")
        elif isinstance(st, ir.Barrier):
            if self.reads_written:
                self.line("storageBarrier();")
            self.line("workgroupBarrier();")
        elif isinstance(st, ir.Subgroup):
            self.reduction(st)
        else:
            raise TypeError(f"no WGSL for {type(st).__name__}")

    def reduction(self, st: ir.Subgroup) -> None:
        """``name = subgroup_add(value)``: the adapter's built-in, or, without one, each
        invocation's value through a shared array and a sum (max, min) of its subgroup's,
        in lane order, as the interpreter computes it."""
        value = self.value(st.value)
        if self.subgroups:
            self.line(f"v_{st.name} = {_REDUCTIONS[st.op]}({value});")
            return
        kind = st.value.type
        self.scratch.add(kind)
        scratch, width = f"sg_{kind.name}", ir.SUBGROUP_SIZE
        self.line(f"{scratch}[lix] = {value};")
        self.line("workgroupBarrier();")
        first = self.temporary("e", f"lix / {width}u * {width}u")
        last = self.temporary("e", f"min({first} + {width}u, {math.prod(self.group)}u)")
        total, k = f"r{next(self.names)}", f"k{next(self.names)}"
        combine = fill(BINARY[st.op].wgsl, {"T": kind.name}, strict=False)
        combine = re.sub(r"\b(a|b)\b", lambda m: total if m.group() == "a" else
                         f"{scratch}[{k}]", combine)
        self.line(f"var {total} = {scratch}[{first}];")
        self.line(f"for (var {k} = {first} + 1u; {k} < {last}; {k}++) "
                  f"{{ {total} = {combine}; }}")
        self.line("workgroupBarrier();")  # every invocation has read before the next write
        self.line(f"v_{st.name} = {total};")

    def nested(self, stmts: tuple[ir.Stmt, ...]) -> None:
        self.depth += 1
        self.block(stmts)
        self.depth -= 1

    def loop(self, st: ir.For) -> None:
        """``for var in range(start, stop, step)``: the bounds evaluated once, the count of
        iterations in a u32 (no overflow, whatever the bounds), and the variable set from
        the count on each iteration (the body may assign it, as in Python)."""
        lo = self.temporary("lo", self.value(st.start))
        hi = self.temporary("hi", self.value(st.stop))
        first, last = (lo, hi) if st.step > 0 else (hi, lo)
        stride = min(abs(st.step), 0xFFFFFFFF)  # a larger step runs at most once anyway
        span = f"u32({last} - {first})"
        total = span if stride == 1 else f"({span} - 1u) / {stride}u + 1u"
        n = self.temporary("n", f"select(0u, {total}, {first} < {last})")
        k = f"k{next(self.names)}"
        self.line(f"for (var {k} = 0u; {k} < {n}; {k}++) {{")
        self.depth += 1
        step = "" if st.step == 1 else f" * {literal(ir.Const(st.step, ir.I32))}"
        self.line(f"v_{st.var} = {lo} + i32({k}){step};")
        self.block(st.body)
        self.depth -= 1
        self.line("}")

    # ---- expressions -----------------------------------------------------------------
    def value(self, e: ir.Expr) -> str:
        """The WGSL of `e` (its repeated operands computed into ``let``s first)."""
        return self.expr(self.fold(e))

    def fold(self, e: ir.Expr) -> ir.Expr:
        """`e` with every operation on constants replaced by its value, as the interpreter
        computes it (the workgroup size is a constant too)."""
        if isinstance(e, ir.Position) and e.what == "size":
            return ir.Const(self.group[e.axis], ir.I32)
        if isinstance(e, ir.Position) and e.what == "subgroup_size" and not self.subgroups:
            return ir.Const(ir.SUBGROUP_SIZE, ir.I32)
        if isinstance(e, ir.Load):
            return replace(e, index=self.fold(e.index))
        if isinstance(e, ir.Unary):
            e = replace(e, a=self.fold(e.a))
            operands: tuple[ir.Expr, ...] = (e.a,)
        elif isinstance(e, ir.Binary):
            e = replace(e, a=self.fold(e.a), b=self.fold(e.b))
            operands = (e.a, e.b)
        elif isinstance(e, ir.Call):
            e = replace(e, args=tuple(self.fold(a) for a in e.args))
            operands = e.args
        else:
            return e
        if all(isinstance(o, ir.Const) for o in operands):
            return ir.Const(self.reference.expr(e)(interpret.State({}, {})), e.type)
        return e

    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.Const):
            if e.type is ir.F32:  # read from info: a literal lets a driver fold x * 0.0 to 0.0
                bits = f32_bits(e.value)
                return self.constants.setdefault(bits, f"c{len(self.constants)}")
            return literal(e)
        if isinstance(e, ir.Var):
            return f"v_{e.name}"
        if isinstance(e, ir.Position):
            if e.what.startswith("subgroup_"):
                return (_HARDWARE_POSITIONS if self.subgroups else _EMULATED_POSITIONS)[e.what]
            return f"i32({_BUILTINS[e.what]}.{'xyz'[e.axis]})"
        if isinstance(e, ir.Size):
            self.sizes.add((e.tensor, e.axis))
            return f"d_{e.tensor}_{e.axis}"
        if isinstance(e, ir.Load):
            where = self.element_ref(e.memory, e.index)
            return f"atomicLoad(&{where})" if e.memory in self.kernel.atomics else where
        if isinstance(e, ir.Unary):
            if e.op == "logical_not":  # of a bool (the table's takes a number)
                return f"(!{self.expr(e.a)})"
            return self.template(UNARY[e.op].wgsl, e.a.type, {"x": e.a})
        if isinstance(e, ir.Binary):
            if e.a.type is ir.BOOL:
                return f"({self.expr(e.a)} {_LOGICAL[e.op]} {self.expr(e.b)})"
            shift = _power_of_two(e)
            if shift is not None:  # a shift or a mask: exact, and no division (see below)
                if e.op == "floor_divide":
                    return f"({self.expr(e.a)} >> {shift}u)"
                return f"({self.expr(e.a)} & {literal(ir.Const((1 << shift) - 1, e.type))})"
            return self.template(BINARY[e.op].wgsl, e.a.type, {"a": e.a, "b": e.b})
        if isinstance(e, ir.Call):
            return self.call(e)
        raise TypeError(f"no WGSL for {type(e).__name__}")

    def call(self, e: ir.Call) -> str:
        if e.fn == "select":
            cond, yes, no = (self.expr(a) for a in e.args)
            return f"select({no}, {yes}, {cond})"
        (x,) = e.args
        if e.fn in ir.TYPES:
            return self.template(_conversion(_KINDS[x.type], _KINDS[e.type]), x.type, {"x": x})
        return self.template(UNARY[e.fn].wgsl, x.type, {"x": x})

    def template(self, text: str, kind: ir.Type, operands: dict[str, ir.Expr]) -> str:
        """An op table template in compute type `kind` over `operands` (by placeholder: x,
        or a and b); an operand it names more than once is computed once, into a ``let``."""
        text = fill(text, {"T": kind.name}, strict=False)
        pattern = re.compile(rf"\b({'|'.join(operands)})\b")
        uses = pattern.findall(text)
        values = {}
        for name, e in operands.items():
            value = self.expr(e)
            simple = isinstance(e, (ir.Const, ir.Var, ir.Position, ir.Size))
            values[name] = value if simple or uses.count(name) < 2 else \
                self.temporary("e", value)
        return f"({pattern.sub(lambda m: values[m.group()], text)})"

    def element_ref(self, memory: str, index: ir.Expr) -> str:
        """``memory[index]`` in WGSL: a shared array's element, or a tensor's at its offset
        in its binding."""
        at = self.value(index)
        if memory in self.shared:
            return f"s_{memory}[{at}]"
        if memory in self.arrays:
            return f"p_{memory}[{at}]"
        return f"t_{memory}[o_{memory} + {at}]"


def _power_of_two(e: ir.Binary) -> int | None:
    """k where `e` is an integer ``a // 2**k`` or ``a % 2**k``, else None. Python's floor
    division and remainder by a power of two are an arithmetic shift and a mask in two's
    complement, negative `a` too; the op table's helpers divide, which a CPU driver does
    lane by lane (on llvmpipe, 16 rounds of ``(v + r) // 8 + (v - r) % 16`` over 1M
    elements took 32 ms with them, 8.9 ms as shifts and masks)."""
    if e.op not in ("floor_divide", "remainder") or e.type.kind not in "iu" or \
            not isinstance(e.b, ir.Const):
        return None
    value = interpret.wrap(int(e.b.value), e.type)
    return value.bit_length() - 1 if value > 0 and value & (value - 1) == 0 else None


def shader(kernel: ir.Kernel, group: Dims, subgroups: bool = False) -> Shader:
    """The shader of `kernel` for workgroups of `group` invocations (generated once): on
    the adapter's subgroups where `subgroups` says it has them and the workgroup is 1-d,
    else on emulated ones. In a workgroup of more dimensions, which invocations make a
    subgroup is the driver's choice (llvmpipe makes them of one row along x, whatever
    its size; Naga takes no ``subgroup_invocation_id`` there)."""
    # IRs whose constants differ only in a zero's sign compare equal: the bits tell them apart
    bits = tuple(f32_bits(n.value) for n in _nodes(kernel)
                 if isinstance(n, ir.Const) and n.type is ir.F32)
    return _generate(kernel, group, bits, subgroups and group[1] == group[2] == 1)


@functools.lru_cache(maxsize=512)
def _generate(kernel: ir.Kernel, group: Dims, bits: tuple[int, ...],
              subgroups: bool) -> Shader:
    path = _kept(kernel, group, bits, subgroups)
    if path is not None and path.exists():
        try:
            found = json.loads(path.read_text())
            kept = Shader(found["source"], tuple(found["tensors"]), found["uses_info"],
                          tuple(found["constants"]))
            STATS.from_disk += 1
            return kept
        except (OSError, ValueError, KeyError, TypeError):  # a broken file: generated anew
            pass
    STATS.generated += 1
    made = Codegen(kernel, group, subgroups).shader()
    if path is not None:
        cache.write_whole(path, json.dumps({"source": made.source, "tensors": made.tensors,
                                            "uses_info": made.uses_info,
                                            "constants": made.constants}))
    return made


def _kept(kernel: ir.Kernel, group: Dims, bits: tuple[int, ...],
          subgroups: bool) -> Path | None:
    """Where the shader of this IR, group and subgroups is kept between processes (``kernels/`` in
    `cache.folder`), by a digest of them and of what generates shaders; None where nothing is
    kept."""
    root = cache.folder()
    if root is None:
        return None
    plain = replace(kernel, atomics=frozenset())  # (a set's order differs between processes)
    key = repr((_generator_version(), plain, sorted(kernel.atomics), group, bits, subgroups))
    return root / "kernels" / f"{hashlib.sha256(key.encode()).hexdigest()}.json"


@functools.cache
def _generator_version() -> str:
    """A digest of what generates shaders (this module, the op table, the helper library):
    a shader kept by another version of them is not used."""
    digest = hashlib.sha256()
    for module in (__file__, elementwise_table.__file__):
        digest.update(Path(module).read_bytes())
    digest.update(template_source("functions").encode())
    return digest.hexdigest()


# ---- launches --------------------------------------------------------------------------------

def check_limits(kernel: ir.Kernel, found: Shader, grid: Dims, group: Dims,
                 limits: Limits) -> None:
    """A KernelError unless the launch fits the adapter: grid, workgroup, shared memory and
    storage bindings."""
    name = f"kernel {kernel.name}"
    most = limits.max_workgroups_per_dimension
    if max(grid) > most:
        raise KernelError(f"{name}: a grid of {grid} workgroups has more than the adapter's "
                          f"max_workgroups_per_dimension ({most}) along a dimension; launch "
                          "fewer workgroups (each invocation may loop over several elements) "
                          "or spread them over more dimensions")
    invocations = math.prod(group)
    if invocations > limits.max_invocations_per_workgroup:
        raise KernelError(f"{name}: a workgroup of {group} ({invocations} invocations) is "
                          f"larger than the adapter's max_invocations_per_workgroup "
                          f"({limits.max_invocations_per_workgroup})")
    shared = sum(4 * a.size for a in kernel.shared) + 4 * invocations * found.source.count(
        "var<workgroup> sg_")  # (the emulated subgroups' arrays)
    if shared > limits.max_workgroup_storage_size:
        raise KernelError(f"{name}: its shared arrays take {shared} bytes, more than the "
                          f"adapter's max_workgroup_storage_size "
                          f"({limits.max_workgroup_storage_size})")
    bindings = len(found.tensors) + found.uses_info
    if bindings > limits.max_storage_buffers_per_shader_stage:
        raise KernelError(f"{name}: it binds {bindings} storage buffers, more than the "
                          f"adapter's max_storage_buffers_per_shader_stage "
                          f"({limits.max_storage_buffers_per_shader_stage})")


def prepared(gpu: Gpu, t: GpuTensor, written: bool) -> GpuTensor:
    """What the shader binds for `t`: a new buffer holding a written tensor's starting
    contents (or an empty tensor: a bindable range), else `t`, contiguous."""
    if written or t.numel == 0:
        fresh = gpu.empty(t.shape, t.dtype)
        copy_into(gpu, fresh, t)
        return fresh
    return contiguous(gpu, t)


def bind_range(gpu: Gpu, t: GpuTensor, name: str) -> tuple[Binding, int]:
    """The range of contiguous `t`'s buffer to bind (from an aligned byte offset), and
    `t`'s element offset within it."""
    limits = gpu.runtime.limits
    item, align = t.kind.itemsize, limits.min_storage_buffer_offset_alignment
    start = t.offset * item // align * align
    end = min(t.storage.nbytes, (t.offset + max(t.numel, 1)) * item)
    if end - start > limits.max_storage_buffer_binding_size:
        raise KernelError(f"{name} takes {end - start} bytes, more than the adapter's "
                          f"max_storage_buffer_binding_size "
                          f"({limits.max_storage_buffer_binding_size})")
    return (t.storage.buffer, start, end - start), t.offset - start // item


def _word(value: Any, param: ir.Param) -> int:
    """The i32 word in ``info`` of scalar parameter `param` given `value`, converted as the
    interpreter converts it."""
    source = ir.F32 if isinstance(value, float) else ir.I32
    converted = interpret.convert(value, source, param.type)
    return f32_bits(converted) if param.type is ir.F32 else interpret.wrap(converted, ir.I32)


def gpu_of(backend: Backend) -> tuple[Gpu, Callable[[Any], GpuTensor]]:
    """The `Gpu` of a wgpu backend, and how its handles become `GpuTensor`s: the plain
    backend's are `GpuTensor`s, and so are the fusion backend's computed ones (its pending
    ones are lazy `Handle`s); a `GpuTensor` is a handle on both."""
    if isinstance(backend, WgpuBackend):
        return backend.gpu, lambda handle: handle
    fused = cast("FusionBackend", backend)
    return fused.gpu, fused.ready


def _bindings(kernel: ir.Kernel, found: Shader, gpu: Gpu, bound: dict[str, GpuTensor],
              tensors: dict[str, Tensor], scalars: dict[str, Any]) -> dict[int, Binding]:
    """The bound tensors' bindings, and binding 0: ``info``, the scalars' words, the
    tensors' offsets and sizes (in the order of `info_slots`), then the f32 constants."""
    words: list[int] = []
    bindings: dict[int, Binding] = {}
    for param in kernel.params:
        if not param.tensor:
            words.append(_word(scalars[param.name], param))
            continue
        offset = 0
        if param.name in bound:
            k = found.tensors.index(param.name) + 1
            bindings[k], offset = bind_range(gpu, bound[param.name],
                                        f"kernel {kernel.name}: {param.name}")
        words += [offset, *tensors[param.name].shape]
    if found.uses_info:
        bindings[0] = gpu.meta.binding(words + list(found.constants))
    return bindings


def run_wgsl(kernel: ir.Kernel, tensors: dict[str, Tensor], scalars: dict[str, Any],
             grid: Dims, group: Dims) -> dict[str, Tensor]:
    """Run `kernel` over `grid` workgroups of `group` invocations on the tensors' wgpu
    device (fused or not): returns a new tensor for each tensor the kernel writes, holding
    its final contents (the arguments are not changed)."""
    if not tensors:
        return {}  # nothing to run on, and nothing to return
    device = next(iter(tensors.values())).device.plain()
    gpu, ready = gpu_of(device.backend)
    found = shader(kernel, group, "subgroups" in gpu.runtime.features)
    check_limits(kernel, found, grid, group, gpu.runtime.limits)
    # (held until dispatched: a buffer no one holds goes back to the pool, for reuse)
    bound = {name: prepared(gpu, ready(tensors[name]._h), name in kernel.written)
             for name in found.tensors}
    bindings = _bindings(kernel, found, gpu, bound, tensors, scalars)
    gpu.runtime.dispatch(found.source, "main", bindings, grid)
    STATS.launches += 1
    return {name: wrap(bound[name], bound[name].shape, bound[name].dtype, device)
            for name in kernel.written}
