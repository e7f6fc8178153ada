"""The numpy executor: kernels on the cpu device, vectorised over the whole grid.

Every invocation of a launch is one lane of numpy arrays: a value is an array with one
element per lane (workgroups x fastest, then the invocations of each x fastest, the
interpreter's order), or a numpy scalar where it is the same in every lane (constants,
scalar parameters, sizes, uniform loop counters). Statements run one after the other for
all lanes together, under a mask of the lanes that are active (None: all of them): ``if``
runs each branch under the lanes that take it, a loop runs while any lane still iterates,
an assignment keeps inactive lanes' old values, and loads, stores and atomics touch only
active lanes. A barrier is then a no-op, except that a workgroup must reach it whole; a
subgroup reduction combines the lanes of each subgroup, lane by lane in order.
Tensors are flat arrays (those the kernel writes are copies, with one spare element where
inactive lanes' stores go); a shared array holds one row per workgroup.

Two shortcuts keep it near the speed of the same expression written in numpy: an operation
writes its result over an operand that is a temporary array (as numpy does for its own
temporaries), and an index that is the lane's number (``global_id(0)`` of a 1-d launch)
loads and stores through slices, its comparisons with a scalar making masks directly.

The semantics are the interpreter's (`interpret.py`), bit for bit: numpy's int32 and uint32
wrap as it does, and numpy's float32 +, -, *, / and sqrt round as its float64 ones rounded
to float32 do. Where the cpu backend's functions differ from it, this module follows the
interpreter: floor division and powers of floats are computed in float64, and float min/max,
remainders by infinity and rounding functions give the op table's scalar results for signed
zeros. Math functions (exp, tanh, ...) are numpy's float32 ones, within an ulp or two.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .._tensor import Tensor, wrap
from ..backends.cpu.ops import BINARY_FUNCTIONS, UNARY_FUNCTIONS
from ..ops.elementwise import UNARY
from . import ir
from .interpret import convert
from .ir import KernelError

#: the numpy dtype of each scalar type
DTYPES: dict[ir.Type, np.dtype] = {ir.F32: np.dtype(np.float32), ir.I32: np.dtype(np.int32),
                                   ir.U32: np.dtype(np.uint32), ir.BOOL: np.dtype(np.bool_)}
_ZERO_F32 = np.float32(0.0)
_LOGICAL = ("logical_and", "logical_or")
_ORDER = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}  # each with its operands swapped

Value = Any  # an np.ndarray with one element per lane, or an np.generic shared by all lanes
Mask = np.ndarray | None  # the active lanes; None when all are
Eval = Callable[["State", Mask], Value]
Run = Callable[["State", Mask], None]


def _scalar(value: bool | int | float, kind: ir.Type) -> np.generic:
    """A constant or a scalar parameter as a numpy scalar of `kind`, converted as the
    interpreter converts it."""
    if kind is ir.BOOL:
        return np.bool_(value)
    return DTYPES[kind].type(convert(value, ir.F32 if isinstance(value, float) else ir.I32,
                                     kind))


def _lanewise(value: Value) -> bool:
    """Whether `value` differs between lanes (an array) rather than being one scalar."""
    return type(value) is np.ndarray


def _fix(value: Any, dtype: np.dtype) -> Value:
    """`value` as `dtype`, a 0-d result made a scalar."""
    if value.dtype != dtype:
        value = value.astype(dtype)
    if type(value) is np.ndarray and value.ndim == 0:
        value = value[()]
    return value


def _narrow(mask: Mask, cond: np.ndarray) -> tuple[bool, Mask]:
    """The lanes of `mask` where `cond` holds: whether there are any, and their mask."""
    if mask is None:
        return (True, None) if cond.all() else (bool(cond.any()), cond)
    narrowed = mask & cond
    return bool(narrowed.any()), narrowed


def _merge(mask: Mask, new: Value, old: Value | None, dtype: np.dtype) -> Value:
    """A variable's value after an assignment of `new` under `mask`."""
    if mask is None or old is None:  # no lane keeps an old value (or it has none)
        return new
    return _fix(np.where(mask, new, old), dtype)


def _last(mask: Mask, count: int) -> int:
    """The last active lane."""
    return count - 1 if mask is None else count - 1 - int(np.argmax(mask[::-1]))


# ---- the op table's functions on lanes --------------------------------------------------------

def _float_floor_divide(a: Value, b: Value) -> Value:
    """``a // b`` in float64, as the interpreter's Python floats (float32 rounds its
    intermediate results differently)."""
    return BINARY_FUNCTIONS["floor_divide"](a.astype(np.float64), b.astype(np.float64))


def _float_power(a: Value, b: Value) -> Value:
    """``a ** b`` in float64, as Python's ``math.pow``. numpy's power takes an exponent of 0.5
    that is one value for all elements (stride 0) for a square root, whose -0.0 and NaN
    differ from pow's 0.0 and inf at -0.0 and -inf: the exponent is made an array."""
    shape = np.shape(a) if _lanewise(a) else np.shape(b)
    exponent = np.full(shape or (1,), b, np.float64)
    result = BINARY_FUNCTIONS["pow"](a.astype(np.float64), exponent)
    return result if shape else result[0]


def _float_remainder(a: Value, b: Value) -> Value:
    """Python's float ``%``, in float64; a zero by an infinity stays itself, signed, as the
    op table's scalar function has it (numpy takes the infinity's sign)."""
    out = BINARY_FUNCTIONS["remainder"](a.astype(np.float64), b.astype(np.float64))
    return np.where((a == 0) & np.isinf(b), a, out)


def _float_minimum(a: Value, b: Value) -> Value:
    """The op table's minimum: `a` where ``a <= b`` or `a` is NaN (of +0 and -0, the
    first), else `b`."""
    return np.where((a <= b) | np.isnan(a), a, b)


def _float_maximum(a: Value, b: Value) -> Value:
    """The op table's maximum: `a` where ``a >= b`` or `a` is NaN, else `b`."""
    return np.where((a >= b) | np.isnan(a), a, b)


_FLOAT_BINARY: dict[str, Callable] = {
    "floor_divide": _float_floor_divide,
    "pow": _float_power,
    "remainder": _float_remainder, "minimum": _float_minimum, "maximum": _float_maximum}


def _binary_function(op: str, operand: ir.Type) -> Callable:
    """The numpy function of binary `op` on operands of type `operand`."""
    if operand is ir.F32 and op in _FLOAT_BINARY:
        return _FLOAT_BINARY[op]
    return BINARY_FUNCTIONS[op]


def _unary_function(op: str, operand: ir.Type) -> Callable:
    """The numpy function of unary `op` (or math function) on an `operand`."""
    fn = UNARY_FUNCTIONS[op]
    if operand is ir.F32 and UNARY[op].domain == "rounding":
        # -0.0 + 0.0 is +0.0: the op table's scalar functions round to an int, signless
        return lambda x: fn(x) + _ZERO_F32
    return fn


def _float_to_int(x: Value, dtype: np.dtype) -> Value:
    """Floats to a 32-bit integer dtype as `interpret.convert` does: truncated toward zero,
    wrapped modulo 2**32, NaN and infinities as 0."""
    if -2.0**31 <= np.min(x) and np.max(x) < 2.0**31:  # NaN fails this
        return x.astype(np.int32).astype(dtype, copy=False)
    finite = np.where(np.isfinite(x), x, 0).astype(np.float64)
    return np.fmod(finite, 2.0**32).astype(np.int64).astype(dtype)


def _cast(x: Value, source: ir.Type, target: ir.Type) -> Value:
    """A cast of `x` from `source` to `target` (see `interpret.convert`)."""
    if source is ir.F32 and target is not ir.F32:
        return _float_to_int(x, DTYPES[target])
    return x.astype(DTYPES[target])


def _reads_memory(e: ir.Expr) -> bool:
    """Whether evaluating `e` loads from memory (which fails for an index out of range)."""
    if isinstance(e, ir.Load):
        return True
    children = {ir.Unary: ("a",), ir.Binary: ("a", "b")}.get(type(e), ())
    args = e.args if isinstance(e, ir.Call) else ()
    return any(_reads_memory(getattr(e, name)) for name in children) or \
        any(_reads_memory(a) for a in args)


@functools.lru_cache(maxsize=4)
def _lane_numbers(count: int) -> np.ndarray:
    """``arange(count)`` as int32, read-only (kept for the next launches of that size)."""
    numbers = np.arange(count, dtype=np.int32)
    numbers.flags.writeable = False
    return numbers


def _makes_new(e: ir.Expr) -> bool:
    """Whether `e`, where it differs between lanes, is a new array that nothing else holds
    (the result of a ufunc or a cast), which the operation it feeds may overwrite."""
    if isinstance(e, ir.Binary):
        return isinstance(_binary_function(e.op, e.a.type), np.ufunc) and not (
            e.op in _LOGICAL and _reads_memory(e.b))
    if isinstance(e, ir.Unary):
        return isinstance(_unary_function(e.op, e.a.type), np.ufunc)
    if isinstance(e, ir.Call) and e.fn != "select":
        return e.fn in ir.TYPES or isinstance(_unary_function(e.fn, e.args[0].type), np.ufunc)
    return False


# ---- the lanes and the memory of one launch ----------------------------------------------------

class Lanes:
    """The lanes of a launch over `grid` workgroups of `group` invocations: how many, and
    their positions (each computed once, on first use)."""

    def __init__(self, grid: tuple[int, int, int], group: tuple[int, int, int]):
        self.grid, self.group = grid, group
        self.groups, self.size = math.prod(grid), math.prod(group)
        self.count = self.groups * self.size
        self.positions: dict[tuple[str, int], Value] = {}
        self.starts: dict[int, np.ndarray | None] = {}

    @functools.cached_property
    def index(self) -> np.ndarray:
        """Each lane's number: also what a position is where only its own axis varies (the
        executor recognises this array to load and store through slices)."""
        return _lane_numbers(self.count)

    def position(self, what: str, axis: int) -> Value:
        """The "global", "local" or "group" id of each lane along `axis`, or the "groups"
        or "size" count along it."""
        key = (what, axis)
        if key not in self.positions:
            self.positions[key] = self.compute(what, axis)
        return self.positions[key]

    def compute(self, what: str, axis: int) -> Value:
        """A position (see `position`), computed: a scalar where every lane has the same,
        `index` where it is the lane's number, else an array built by broadcasting."""
        if what in ("groups", "size"):
            return np.int32((self.grid if what == "groups" else self.group)[axis])
        if what == "subgroup_size":
            return np.int32(ir.SUBGROUP_SIZE)
        if what in ("subgroup_id", "subgroup_lane"):
            local = _lane_numbers(self.count) % np.int32(self.size)  # the local index
            split = np.floor_divide if what == "subgroup_id" else np.remainder
            return split(local, np.int32(ir.SUBGROUP_SIZE))
        groups, size = self.grid[axis], self.group[axis]
        distinct = {"group": groups, "local": size, "global": groups * size}[what]
        if distinct == 1:
            return np.int32(0)
        if distinct == self.count:  # only this axis varies: the lanes' numbers
            return self.index
        # lanes as a C-ordered (groups z, y, x, invocations z, y, x) array
        group_dims, local_dims = [1] * 6, [1] * 6
        group_dims[2 - axis], local_dims[5 - axis] = groups, size
        g = np.arange(groups, dtype=np.int32).reshape(group_dims)
        local = np.arange(size, dtype=np.int32).reshape(local_dims)
        value = {"group": g, "local": local, "global": g * np.int32(size) + local}[what]
        return np.broadcast_to(value, (*self.grid[::-1], *self.group[::-1])).reshape(-1)

    def reduce(self, combine: Callable[[np.ndarray, np.ndarray], np.ndarray],
               values: np.ndarray) -> np.ndarray:
        """Each lane's subgroup reduction of `values` (one per lane), in lane order: lane
        j of every subgroup is combined into the totals at once."""
        size, width = self.size, ir.SUBGROUP_SIZE
        rows = values.reshape(self.groups, size)
        totals = rows[:, ::width].copy()  # lane 0 of each subgroup
        for lane in range(1, min(width, size)):
            column = rows[:, lane::width]  # the subgroups that have this lane: the first k
            k = column.shape[1]
            totals[:, :k] = combine(totals[:, :k], column)
        return np.repeat(totals, width, axis=1)[:, :size].reshape(-1)

    def where_number(self, op: str, k: int) -> np.ndarray:
        """The mask of the lanes whose number is "lt", "le", "gt" or "ge" `k`."""
        start, stop = {"lt": (0, k), "le": (0, k + 1), "gt": (k + 1, self.count),
                       "ge": (k, self.count)}[op]
        mask = np.zeros(self.count, np.bool_)
        mask[max(start, 0):max(stop, 0)] = True
        return mask

    def row_starts(self, size: int) -> np.ndarray | None:
        """Where each lane's workgroup's row begins in a shared array of `size` elements a
        row (None for a single workgroup)."""
        if size not in self.starts:
            self.starts[size] = None if self.groups == 1 else \
                np.repeat(np.arange(self.groups, dtype=np.intp) * size, self.size)
        return self.starts[size]


class State:
    """The lanes' variables and the launch's memory: flat tensors (the written ones with a
    spare last element) and shared arrays (a row per workgroup, and a spare element)."""

    def __init__(self, kernel: ir.Kernel, lanes: Lanes, memory: dict[str, np.ndarray],
                 shapes: dict[str, tuple[int, ...]], scalars: dict[str, Value]):
        self.kernel, self.lanes, self.memory = kernel, lanes, memory
        # a variable holds 0 until assigned (ir.py), in every lane
        self.vars: dict[str, Value] = {name: DTYPES[kind].type(0) for name, kind in
                                       kernel.locals}
        self.vars.update(scalars)
        self.sizes = {(name, axis): np.int32(n) for name, shape in shapes.items()
                      for axis, n in enumerate(shape)}
        self.length = {name: math.prod(shape) for name, shape in shapes.items()}
        self.rows = {a.name: a.size for a in kernel.shared}
        self.own = {a.name: a.size for a in kernel.arrays}  # a row per lane
        self.length.update(self.rows)
        self.length.update(self.own)
        self.written = set(kernel.written)

    def out_of_range(self, memory: str, index: int) -> KernelError:
        """The interpreter's error for `index` outside `memory`."""
        return KernelError(f"kernel {self.kernel.name}: index {index} is out of range for "
                           f"{memory}, which holds {self.length[memory]} elements")

    def checked(self, memory: str, index: Value, mask: Mask) -> Value:
        """`index` where it is in range for every active lane (and 0 for inactive ones)."""
        n = self.length[memory]
        if not _lanewise(index):
            if not 0 <= index < n:
                raise self.out_of_range(memory, int(index))
            return index
        if mask is not None:
            index = np.where(mask, index, 0)
        if index.min() < 0 or index.max() >= n:
            bad = (index < 0) | (index >= n)
            if mask is not None:
                bad &= mask
            raise self.out_of_range(memory, int(index[np.argmax(bad)]))
        return index

    def place(self, memory: str, index: Value) -> Value:
        """Where `index` lies in `memory`'s flat array (in the lane's workgroup's row, if
        shared; in the lane's own row, for an invocation's own array)."""
        own = self.own.get(memory)
        if own is not None:
            return self.lanes.index * own + index if self.lanes.count > 1 else index
        size = self.rows.get(memory)
        starts = None if size is None else self.lanes.row_starts(size)
        return index if starts is None else starts + index

    def through_lanes(self, memory: str, index: Value) -> bool:
        """Whether `index` is each lane's number into a tensor (a slice's worth of it)."""
        return index is self.lanes.index and memory not in self.rows and \
            memory not in self.own

    def check_lanes(self, memory: str, mask: Mask) -> None:
        """That no active lane numbers past `memory`'s end (the index being the lane's)."""
        n = self.length[memory]
        if n < self.lanes.count and (mask is None or mask[n:].any()):
            raise self.out_of_range(memory, n + (0 if mask is None else
                                                 int(np.argmax(mask[n:]))))

    def gather(self, memory: str, index: Value, mask: Mask) -> Value:
        """``memory[index]`` for each active lane (anything for inactive ones)."""
        flat = self.memory[memory]
        if self.through_lanes(memory, index):
            self.check_lanes(memory, mask)
            n, count = self.length[memory], self.lanes.count
            if n < count:
                return np.concatenate([flat[:n], np.zeros(count - n, flat.dtype)])
            return flat[:count].copy() if memory in self.written else flat[:count]
        return flat[self.place(memory, self.checked(memory, index, mask))]

    def scatter(self, memory: str, index: Value, value: Value, mask: Mask) -> None:
        """``memory[index] = value`` for each active lane (the last lane wins a tie)."""
        flat, count = self.memory[memory], self.lanes.count
        if self.through_lanes(memory, index):
            self.check_lanes(memory, mask)
            n = min(self.length[memory], count)
            value = value[:n] if _lanewise(value) else value
            if mask is None or mask[:n].all():
                flat[:n] = value
            else:
                np.copyto(flat[:n], value, where=mask[:n])
            return
        target = self.place(memory, self.checked(memory, index, mask))
        if not _lanewise(target):
            flat[target] = value[_last(mask, count)] if _lanewise(value) else value
        elif mask is None:
            flat[target] = value
        else:
            flat[np.where(mask, target, flat.size - 1)] = value  # inactive: the spare

    def update(self, op: str, memory: str, index: Value, value: Value, mask: Mask) -> None:
        """``atomic_add`` or ``atomic_max`` of `value` into ``memory[index]``, lane by lane."""
        count = self.lanes.count
        target = np.broadcast_to(self.place(memory, self.checked(memory, index, mask)),
                                 (count,))
        value = np.broadcast_to(value, (count,))
        if mask is not None:
            target, value = target[mask], value[mask]
        (np.add if op == "add" else np.maximum).at(self.memory[memory], target, value)

    def barrier(self, mask: Mask) -> None:
        """Check that each workgroup reaches the barrier (or subgroup reduction) whole, or
        not at all."""
        if mask is None:
            return
        rows = mask.reshape(self.lanes.groups, self.lanes.size)
        if (rows.any(axis=1) != rows.all(axis=1)).any():
            raise KernelError(f"kernel {self.kernel.name}: some invocations of a workgroup "
                              "reached a barrier or a subgroup reduction that others did not "
                              "(one under a condition that differs between them)")


# ---- the IR as closures -----------------------------------------------------------------------

class Compiler:
    """The IR as closures of the state and the active lanes' mask."""

    def expr(self, e: ir.Expr) -> Eval:
        """`e` as a function of the state and the mask."""
        if isinstance(e, ir.Const):
            value = _scalar(e.value, e.type)
            return lambda s, m: value
        if isinstance(e, ir.Var):
            name = e.name
            return lambda s, m: s.vars[name]
        if isinstance(e, ir.Position):
            what, axis = e.what, e.axis
            return lambda s, m: s.lanes.position(what, axis)
        if isinstance(e, ir.Size):
            key = (e.tensor, e.axis)
            return lambda s, m: s.sizes[key]
        if isinstance(e, ir.Unary):
            return self.unary(_unary_function(e.op, e.a.type), e.a, e.type)
        if isinstance(e, ir.Binary):
            return self.binary(e)
        if isinstance(e, ir.Call):
            return self.call(e)
        if isinstance(e, ir.Load):
            memory, index = e.memory, self.expr(e.index)
            return lambda s, m: s.gather(memory, index(s, m), m)
        raise TypeError(f"no numpy executor rule for {type(e).__name__}")

    def unary(self, fn: Callable, operand: ir.Expr, kind: ir.Type) -> Eval:
        """`fn` of `operand`, giving a `kind`: written over the operand where that is a new
        array of the same type (numpy reuses its own temporaries so; it saves a third)."""
        x, dtype = self.expr(operand), DTYPES[kind]
        if isinstance(fn, np.ufunc) and operand.type is kind and _makes_new(operand):
            def in_place(s: State, m: Mask) -> Value:
                v = x(s, m)
                return fn(v, out=v) if _lanewise(v) else _fix(fn(v), dtype)
            return in_place
        return lambda s, m: _fix(fn(x(s, m)), dtype)

    def binary(self, e: ir.Binary) -> Eval:
        """An arithmetic, bitwise, comparison or logical operation."""
        a, b, dtype = self.expr(e.a), self.expr(e.b), DTYPES[e.type]
        if e.op in _LOGICAL and _reads_memory(e.b):
            return self.short_circuit(e.op == "logical_and", a, b)
        fn = _binary_function(e.op, e.a.type)
        if e.op in _ORDER and e.a.type is ir.I32:
            return self.order(e.op, fn, a, b)
        if isinstance(fn, np.ufunc) and e.a.type is e.type:
            return self.reusing(fn, a, b, _makes_new(e.a), _makes_new(e.b), dtype)
        return lambda s, m: _fix(fn(a(s, m), b(s, m)), dtype)

    @staticmethod
    def reusing(fn: np.ufunc, a: Eval, b: Eval, a_new: bool, b_new: bool,
                dtype: np.dtype) -> Eval:
        """``fn(a, b)`` written over an operand that is a new array (see `unary`)."""
        def run(s: State, m: Mask) -> Value:
            x, y = a(s, m), b(s, m)
            if a_new and _lanewise(x):
                return fn(x, y, out=x)
            if b_new and _lanewise(y):
                return fn(x, y, out=y)
            return _fix(fn(x, y), dtype)
        return run

    @staticmethod
    def order(op: str, fn: Callable, a: Eval, b: Eval) -> Eval:
        """An i32 comparison; of the lanes' numbers with a scalar (``global_id(0) < n``) it
        is a range of lanes, made without a pass over them."""
        def run(s: State, m: Mask) -> Value:
            x, y = a(s, m), b(s, m)
            if x is s.lanes.index and not _lanewise(y):
                return s.lanes.where_number(op, int(y))
            if y is s.lanes.index and not _lanewise(x):
                return s.lanes.where_number(_ORDER[op], int(x))
            return _fix(fn(x, y), DTYPES[ir.BOOL])
        return run

    @staticmethod
    def short_circuit(conjunction: bool, a: Eval, b: Eval) -> Eval:
        """``a and b`` (``a or b``) where `b` loads: evaluated only for the lanes that need
        it, as Python does, so that a guard (``i < n and x[i] > 0``) guards the load."""
        both = np.logical_and if conjunction else np.logical_or

        def run(s: State, m: Mask) -> Value:
            x = a(s, m)
            if not _lanewise(x):
                return b(s, m) if bool(x) == conjunction else x
            some, lanes = _narrow(m, x if conjunction else ~x)
            return both(x, b(s, lanes)) if some else x
        return run

    def call(self, e: ir.Call) -> Eval:
        """A select, a cast or a math function."""
        if e.fn == "select":
            return self.select(e)
        (x,) = e.args
        if e.fn in ir.TYPES:
            source, target = x.type, ir.TYPES[e.fn]
            return self.unary(lambda v: _cast(v, source, target), x, target)
        return self.unary(_unary_function(e.fn, x.type), x, e.type)

    def select(self, e: ir.Call) -> Eval:
        """``select(cond, a, b)``: `a` and `b` each evaluated for the lanes that take it
        where it loads (the interpreter evaluates only the one taken)."""
        cond, yes, no = (self.expr(a) for a in e.args)
        guarded, dtype = any(_reads_memory(a) for a in e.args[1:]), DTYPES[e.type]

        def run(s: State, m: Mask) -> Value:
            c = cond(s, m)
            if not _lanewise(c):
                return yes(s, m) if c else no(s, m)
            if not guarded:
                return _fix(np.where(c, yes(s, m), no(s, m)), dtype)
            (some_yes, yes_lanes), (some_no, no_lanes) = _narrow(m, c), _narrow(m, ~c)
            if not some_no:
                return yes(s, m)
            if not some_yes:
                return no(s, m)
            return _fix(np.where(c, yes(s, yes_lanes), no(s, no_lanes)), dtype)
        return run

    # ---- statements -------------------------------------------------------------------------
    def block(self, stmts: tuple[ir.Stmt, ...]) -> Run:
        """The statements as one function of the state and the mask."""
        parts = [self.stmt(st) for st in stmts]

        def run(s: State, m: Mask) -> None:
            for part in parts:
                part(s, m)
        return run

    def stmt(self, st: ir.Stmt) -> Run:
        """One statement as a function of the state and the mask."""
        if isinstance(st, ir.Assign):
            name, value, dtype = st.name, self.expr(st.value), DTYPES[st.value.type]

            def assign(s: State, m: Mask) -> None:
                s.vars[name] = _merge(m, value(s, m), s.vars.get(name), dtype)
            return assign
        if isinstance(st, ir.Store):
            memory, index, value = st.memory, self.expr(st.index), self.expr(st.value)

            def store(s: State, m: Mask) -> None:
                v = value(s, m)  # the value first, then the index, as Python does
                s.scatter(memory, index(s, m), v, m)
            return store
        if isinstance(st, ir.Atomic):
            op, memory, index, value = st.op, st.memory, self.expr(st.index), \
                self.expr(st.value)

            def atomic(s: State, m: Mask) -> None:
                i = index(s, m)
                s.update(op, memory, i, value(s, m), m)
            return atomic
        if isinstance(st, ir.Barrier):
            return lambda s, m: s.barrier(m)
        if isinstance(st, ir.Subgroup):
            return self.reduction(st)
        if isinstance(st, ir.If):
            return self.conditional(st)
        if isinstance(st, ir.For):
            return self.loop(st)
        if isinstance(st, ir.While):
            return self.repeat(st)
        raise TypeError(f"no numpy executor rule for {type(st).__name__}")

    def reduction(self, st: ir.Subgroup) -> Run:
        """``name = subgroup_add(value)``: reached by whole workgroups, as a barrier."""
        name, value, dtype = st.name, self.expr(st.value), DTYPES[st.value.type]
        fn = _binary_function(st.op, st.value.type)

        def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return fn(a, b).astype(dtype, copy=False)

        def reduce(s: State, m: Mask) -> None:
            s.barrier(m)
            values = np.broadcast_to(value(s, m), (s.lanes.count,)).astype(dtype)
            s.vars[name] = _merge(m, s.lanes.reduce(combine, values), s.vars.get(name),
                                  dtype)
        return reduce

    def conditional(self, st: ir.If) -> Run:
        """``if``: each branch under the lanes that take it (skipped if none does)."""
        cond, then, orelse, has_else = self.expr(st.cond), self.block(st.then), \
            self.block(st.orelse), bool(st.orelse)

        def run(s: State, m: Mask) -> None:
            c = cond(s, m)
            if not _lanewise(c):
                (then if c else orelse)(s, m)
                return
            some, lanes = _narrow(m, c)
            if some:
                then(s, lanes)
            if has_else:
                some, lanes = _narrow(m, ~c)
                if some:
                    orelse(s, lanes)
        return run

    def loop(self, st: ir.For) -> Run:
        """``for var in range(start, stop, step)``: one iteration for all lanes at a time,
        each lane's body masked by its own trip count (bounds read once, at entry)."""
        start, stop, step, var = self.expr(st.start), self.expr(st.stop), st.step, st.var
        body, i32 = self.block(st.body), DTYPES[ir.I32]

        def run(s: State, m: Mask) -> None:
            first = start(s, m)
            last = stop(s, m)
            if not (_lanewise(first) or _lanewise(last)):
                uniform(s, m, range(int(first), int(last), step))
                return
            counter = np.broadcast_to(first, (s.lanes.count,)).astype(np.int64)
            while True:
                some, lanes = _narrow(m, counter < last if step > 0 else counter > last)
                if not some:
                    return
                s.vars[var] = _merge(lanes, counter.astype(i32), s.vars.get(var), i32)
                body(s, lanes)
                counter += step

        def uniform(s: State, m: Mask, values: range) -> None:
            if not values:
                return
            old = s.vars.get(var)
            for i in values:
                s.vars[var] = np.int32(i)  # in every lane: those outside m are put back
                body(s, m)
            s.vars[var] = _merge(m, s.vars[var], old, i32)
        return run

    def repeat(self, st: ir.While) -> Run:
        """``while cond: body``, for as long as any active lane's condition holds (a lane
        whose condition fails leaves the loop for good)."""
        cond, body = self.expr(st.cond), self.block(st.body)

        def run(s: State, m: Mask) -> None:
            while True:
                c = cond(s, m)
                if _lanewise(c):
                    some, m = _narrow(m, c)
                    if not some:
                        return
                elif not c:
                    return
                body(s, m)
        return run


_COMPILED: dict[int, Run] = {}


def _program(kernel: ir.Kernel) -> Run:
    """The kernel's body as closures, compiled on its first launch."""
    key = id(kernel)
    program = _COMPILED.get(key)
    if program is None:
        program = _COMPILED[key] = Compiler().block(kernel.body)
        weakref.finalize(kernel, _COMPILED.pop, key, None)
    return program


def run_numpy(kernel: ir.Kernel, tensors: dict[str, Tensor], scalars: dict[str, Any],
              grid: tuple[int, int, int], group: tuple[int, int, int]) -> dict[str, Tensor]:
    """Run `kernel` over `grid` workgroups of `group` invocations on cpu tensors (numpy
    handles) and the scalar parameters' values; the tensors it writes come back as new
    tensors, by name (the arguments are left as they are)."""
    lanes = Lanes(grid, group)
    memory: dict[str, np.ndarray] = {}
    for name, t in tensors.items():
        flat = np.ravel(t._h)  # row-major; a view where the handle is contiguous
        if name in kernel.written:
            flat = np.concatenate([flat, np.zeros(1, flat.dtype)])  # a copy, and a spare
        memory[name] = flat
    for array in kernel.shared:
        memory[array.name] = np.zeros(lanes.groups * array.size + 1, DTYPES[array.type])
    for array in kernel.arrays:  # each lane's own: a row per lane
        memory[array.name] = np.zeros(lanes.count * array.size + 1, DTYPES[array.type])
    values = {p.name: _scalar(scalars[p.name], p.type) for p in kernel.params if not p.tensor}
    state = State(kernel, lanes, memory, {name: t.shape for name, t in tensors.items()},
                  values)
    with np.errstate(all="ignore"):
        _program(kernel)(state, None)
    out = {}
    for name in kernel.written:
        t = tensors[name]
        out[name] = wrap(memory[name][:-1].reshape(t.shape), t.shape, t.dtype,
                         t.device.plain())
    return out
