"""The kernel interpreter: the reference semantics of the kernel IR (`ir.py`), in pure Python,
for flex and for Pyodide without numpy. Every invocation runs in turn; a kernel that has
barriers or subgroup reductions runs each invocation as a generator that stops at them, and
a workgroup's invocations go round to each together.

The IR is compiled once into Python closures (an expression into a function of the
invocation's state, a statement into one that runs it), not walked on every evaluation.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Generator, Iterator
from typing import Any

from ..ops.elementwise import BINARY, UNARY
from . import ir
from .ir import KernelError

_F32 = struct.Struct("<f")


def to_f32(value: float) -> float:
    """`value` rounded to float32 (overflowing to infinity)."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def wrap(value: int, kind: ir.Type) -> int:
    """`value` as a 32-bit integer of `kind`, wrapping as the hardware does."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if kind is ir.I32 and value >= 1 << 31 else value


def convert(value: Any, source: ir.Type, target: ir.Type) -> Any:
    """A cast, as pyburn's tensor casts do: float to int truncates toward zero and wraps
    (NaN and infinities give 0); int to float rounds to float32; i32 and u32 reinterpret
    their bits."""
    if target is ir.F32:
        return to_f32(float(value))
    if source is ir.F32:
        return wrap(math.trunc(value), target) if math.isfinite(value) else 0
    return wrap(int(value), target)


def _fix(kind: ir.Type) -> Callable[[Any], Any]:
    """What a result of `kind` becomes: float32, a wrapped integer, or a bool."""
    if kind is ir.F32:
        return to_f32
    if kind is ir.BOOL:
        return bool
    return lambda v: wrap(int(v), kind)


def _scalar_fn(entry: Any, operand: ir.Type) -> Callable:
    """The op table's scalar function for operands of type `operand`."""
    if operand.kind in "iu" and entry.py_int is not None:
        return entry.py_int
    return entry.safe or entry.py


class _Reduction:
    """A subgroup reduction's token: how two values combine, in lane order."""

    def __init__(self, fn: Callable[[Any, Any], Any], fix: Callable[[Any], Any]):
        self.combine = lambda a, b: fix(fn(a, b))

    def over(self, values: list[Any], size: int) -> list[Any]:
        """Each invocation's reduction of the values of its subgroup of `size`."""
        out = []
        for start in range(0, len(values), size):
            part = values[start:start + size]
            total = part[0]
            for v in part[1:]:
                total = self.combine(total, v)
            out += [total] * len(part)
        return out


class State:
    """One invocation's variables and positions, and the memory it shares."""

    __slots__ = ("vars", "position", "memory")

    def __init__(self, position: dict[tuple[str, int], int], memory: dict[str, list]):
        self.vars: dict[str, Any] = {}
        self.position = position
        self.memory = memory


Eval = Callable[[State], Any]


class Compiler:
    """The IR of one kernel as closures; `sizes` are the tensor parameters' shapes."""

    def __init__(self, kernel: ir.Kernel, sizes: dict[str, tuple[int, ...]]):
        self.kernel = kernel
        self.sizes = sizes

    @staticmethod
    def constant(e: ir.Expr) -> Any:
        """The value of an expression of constants."""
        return Compiler(ir.Kernel("constant", (), (), (), ()), {}).expr(e)(None)  # type: ignore

    def expr(self, e: ir.Expr) -> Eval:
        if isinstance(e, ir.Const):
            value = _fix(e.type)(e.value)
            return lambda s: value
        if isinstance(e, ir.Var):
            name = e.name
            return lambda s: s.vars[name]
        if isinstance(e, ir.Position):
            key = (e.what, e.axis)
            return lambda s: s.position[key]
        if isinstance(e, ir.Size):
            size = self.sizes[e.tensor][e.axis]
            return lambda s: size
        if isinstance(e, ir.Unary):
            a, fn, fix = self.expr(e.a), _scalar_fn(UNARY[e.op], e.a.type), _fix(e.type)
            return lambda s: fix(fn(a(s)))
        if isinstance(e, ir.Binary):
            return self.binary(e)
        if isinstance(e, ir.Call):
            return self.call(e)
        if isinstance(e, ir.Load):
            return self.load(e)
        raise TypeError(f"no interpreter rule for {type(e).__name__}")

    def binary(self, e: ir.Binary) -> Eval:
        a, b, fix = self.expr(e.a), self.expr(e.b), _fix(e.type)
        if e.op == "logical_and":
            return lambda s: a(s) and b(s)
        if e.op == "logical_or":
            return lambda s: a(s) or b(s)
        fn = _scalar_fn(BINARY[e.op], e.a.type)
        return lambda s: fix(fn(a(s), b(s)))

    def call(self, e: ir.Call) -> Eval:
        args = [self.expr(a) for a in e.args]
        if e.fn == "select":
            cond, yes, no = args
            return lambda s: yes(s) if cond(s) else no(s)
        if e.fn in ir.TYPES:
            (x,), source, target = args, e.args[0].type, ir.TYPES[e.fn]
            return lambda s: convert(x(s), source, target)
        (x,), fn, fix = args, _scalar_fn(UNARY[e.fn], e.args[0].type), _fix(e.type)
        return lambda s: fix(fn(x(s)))

    def index(self, memory: str, index: ir.Expr) -> Callable[[State], int]:
        where, name = self.expr(index), self.kernel.name

        def checked(s: State) -> int:
            i = where(s)
            if not 0 <= i < len(s.memory[memory]):
                raise KernelError(f"kernel {name}: index {i} is out of range for {memory}, "
                                  f"which holds {len(s.memory[memory])} elements")
            return i
        return checked

    def load(self, e: ir.Load) -> Eval:
        memory, at = e.memory, self.index(e.memory, e.index)
        return lambda s: s.memory[memory][at(s)]

    # ---- statements: a function of the state, or a generator function where a barrier is
    def has_barrier(self, stmt: ir.Stmt) -> bool:
        if isinstance(stmt, (ir.Barrier, ir.Subgroup)):
            return True
        children = {ir.If: ("then", "orelse"), ir.For: ("body",), ir.While: ("body",)}
        return any(self.has_barrier(s) for field in children.get(type(stmt), ())
                   for s in getattr(stmt, field))

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[Callable, bool]:
        """The block as one function, and whether it is a generator function."""
        parts = [(self.stmt(s), self.has_barrier(s)) for s in stmts]
        if not any(waits for _, waits in parts):
            runs = [run for run, _ in parts]

            def run(s: State) -> None:
                for part in runs:
                    part(s)
            return run, False

        def steps(s: State) -> Iterator[None]:
            for part, waits in parts:
                if waits:
                    yield from part(s)
                else:
                    part(s)
        return steps, True

    def stmt(self, st: ir.Stmt) -> Callable:
        if isinstance(st, ir.Assign):
            name, value = st.name, self.expr(st.value)

            def assign(s: State) -> None:
                s.vars[name] = value(s)
            return assign
        if isinstance(st, ir.Store):
            memory, at, value = st.memory, self.index(st.memory, st.index), self.expr(st.value)

            def store(s: State) -> None:
                s.memory[memory][at(s)] = value(s)
            return store
        if isinstance(st, ir.Atomic):
            return self.atomic(st)
        if isinstance(st, ir.Barrier):
            token = object()  # which barrier: a workgroup's invocations must reach the same

            def barrier(s: State) -> Iterator[tuple[object, None]]:
                yield token, None
            return barrier
        if isinstance(st, ir.Subgroup):
            return self.reduction(st)
        if isinstance(st, ir.If):
            return self.conditional(st)
        if isinstance(st, ir.For):
            return self.loop(st)
        if isinstance(st, ir.While):
            return self.repeat(st)
        raise TypeError(f"no interpreter rule for {type(st).__name__}")

    def atomic(self, st: ir.Atomic) -> Callable:
        memory, at, value = st.memory, self.index(st.memory, st.index), self.expr(st.value)
        kind = self.kernel.param(memory).type if any(
            p.name == memory for p in self.kernel.params) else \
            next(a.type for a in self.kernel.shared if a.name == memory)
        combine = (lambda old, v: wrap(old + v, kind)) if st.op == "add" else max

        def update(s: State) -> None:
            i = at(s)
            s.memory[memory][i] = combine(s.memory[memory][i], value(s))
        return update

    def reduction(self, st: ir.Subgroup) -> Callable:
        """``name = subgroup_add(value)``: the invocation hands its value to `_in_step`,
        which sends back its subgroup's reduction."""
        name, value = st.name, self.expr(st.value)
        token = _Reduction(_scalar_fn(BINARY[st.op], st.value.type), _fix(st.value.type))

        def reduce(s: State) -> Iterator[tuple[object, Any]]:
            s.vars[name] = yield token, value(s)
        return reduce

    def conditional(self, st: ir.If) -> Callable:
        cond = self.expr(st.cond)
        (then, then_waits), (orelse, else_waits) = self.block(st.then), self.block(st.orelse)
        if not (then_waits or else_waits):
            return lambda s: then(s) if cond(s) else orelse(s)

        def steps(s: State) -> Iterator[None]:
            part, waits = (then, then_waits) if cond(s) else (orelse, else_waits)
            if waits:
                yield from part(s)
            else:
                part(s)
        return steps

    def loop(self, st: ir.For) -> Callable:
        start, stop, step, var = self.expr(st.start), self.expr(st.stop), st.step, st.var
        body, waits = self.block(st.body)
        if not waits:
            def run(s: State) -> None:
                for i in range(start(s), stop(s), step):
                    s.vars[var] = i
                    body(s)
            return run

        def steps(s: State) -> Iterator[None]:
            for i in range(start(s), stop(s), step):
                s.vars[var] = i
                yield from body(s)
        return steps

    def repeat(self, st: ir.While) -> Callable:
        cond = self.expr(st.cond)
        body, waits = self.block(st.body)
        if not waits:
            def run(s: State) -> None:
                while cond(s):
                    body(s)
            return run

        def steps(s: State) -> Iterator[None]:
            while cond(s):
                yield from body(s)
        return steps


def run(kernel: ir.Kernel, memory: dict[str, list], scalars: dict[str, Any],
        sizes: dict[str, tuple[int, ...]], grid: tuple[int, int, int],
        group: tuple[int, int, int]) -> None:
    """Run `kernel` over `grid` workgroups of `group` invocations, on the tensors' element
    lists in `memory` (changed in place) and the scalar parameters' values."""
    body, waits = Compiler(kernel, sizes).block(kernel.body)
    fixed = {name: 0.0 if kind is ir.F32 else (False if kind is ir.BOOL else 0)
             for name, kind in kernel.locals}  # a variable holds 0 until assigned
    fixed.update({p.name: convert(v, ir.F32 if isinstance(v, float) else ir.I32, p.type)
                  for p in kernel.params if not p.tensor for v in (scalars[p.name],)})
    for gz in range(grid[2]):
        for gy in range(grid[1]):
            for gx in range(grid[0]):
                shared = {a.name: [0.0 if a.type is ir.F32 else 0] * a.size
                          for a in kernel.shared}
                states = []
                for lz in range(group[2]):
                    for ly in range(group[1]):
                        for lx in range(group[0]):
                            own = {a.name: [0.0 if a.type is ir.F32 else 0] * a.size
                                   for a in kernel.arrays}
                            states.append(_state((gx, gy, gz), (lx, ly, lz), grid, group,
                                                 {**memory, **shared, **own}, fixed))
                if not waits:
                    for state in states:
                        body(state)
                    continue
                _in_step([body(state) for state in states], kernel.name)


def _state(g: tuple[int, ...], local: tuple[int, ...], grid: tuple[int, ...],
           group: tuple[int, ...], memory: dict[str, list], scalars: dict[str, Any]) -> State:
    index = local[0] + group[0] * (local[1] + group[1] * local[2])
    position = {("subgroup_size", 0): ir.SUBGROUP_SIZE,
                ("subgroup_id", 0): index // ir.SUBGROUP_SIZE,
                ("subgroup_lane", 0): index % ir.SUBGROUP_SIZE}
    for axis in range(3):
        position["group", axis] = g[axis]
        position["local", axis] = local[axis]
        position["global", axis] = g[axis] * group[axis] + local[axis]
        position["groups", axis] = grid[axis]
        position["size", axis] = group[axis]
    state = State(position, memory)
    state.vars.update(scalars)
    return state


def _in_step(invocations: list[Generator[tuple[object, Any], Any, None]], name: str) -> None:
    """Run a workgroup's invocations (in local-index order) to each barrier or subgroup
    reduction together; all must reach it. A reduction's results are sent back to them."""
    replies: list[Any] = [None] * len(invocations)
    running = invocations
    while running:
        waiting, done, reached, values = [], 0, set(), []
        for invocation, reply in zip(running, replies):
            try:
                token, value = invocation.send(reply)
            except StopIteration:
                done += 1
                continue
            reached.add(token)
            waiting.append(invocation)
            values.append(value)
        if (waiting and done) or len(reached) > 1:
            raise KernelError(f"kernel {name}: some invocations of a workgroup reached a "
                              "barrier or a subgroup reduction that others did not (one "
                              "under a condition that differs between them)")
        token = next(iter(reached), None)
        replies = token.over(values, ir.SUBGROUP_SIZE) if isinstance(token, _Reduction) \
            else [None] * len(waiting)
        running = waiting
