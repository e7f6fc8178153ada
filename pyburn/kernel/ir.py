"""The kernel IR: what `lang` makes of a kernel's Python, and what every executor runs (the
interpreter, the numpy executor, WGSL).

A kernel is one function run by every invocation of a grid of workgroups. Its values are
scalars of four types (`F32`, `I32`, `U32`, `BOOL`); its memory is its tensor parameters
(flat arrays of one dtype, indexed in row-major order), its workgroup-shared arrays and the
arrays each invocation has of its own.
Expressions are trees of `Expr` nodes, each with its type; statements are `Stmt` nodes.
The semantics (the interpreter's, `interpret.py`, is the reference):

- integers wrap at 32 bits; ``//`` and ``%`` round toward negative infinity, as Python's;
- floats are float32 after every operation; a cast of a float to an integer truncates
  toward zero and wraps (NaN and infinities give 0), as pyburn's tensor casts do;
- a comparison or a logical operation gives a `BOOL`; ``if``/``while`` take a `BOOL`;
- a variable holds 0 (False) until it is first assigned;
- an index outside a tensor or a shared array is an error where the executor can tell
  (interpreter, numpy) and undefined on a GPU;
- a barrier waits for every invocation of the workgroup; every invocation of a workgroup
  must reach the same barriers (a barrier under a condition that differs between them is
  an error where the executor can tell);
- the invocations of a workgroup form subgroups of `subgroup_size` consecutive ones, in
  the order of their local index (``x`` fastest; the last subgroup may have fewer): the
  adapter's subgroups where it has them and the workgroup is 1-d, else subgroups of
  `SUBGROUP_SIZE`. A subgroup
  reduction gives every invocation of a subgroup the sum, max or min of their values, in
  lane order (in any order on hardware); like a barrier, every invocation of a workgroup
  must reach it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import PyburnError


class KernelError(PyburnError, SyntaxError):
    """Kernel source outside the language, or a launch that does not fit the kernel."""


@dataclass(frozen=True)
class Type:
    """A scalar type of the kernel language: its name in WGSL, and whether it is a float or
    an integer (signed or not)."""

    name: str
    kind: str  # "f" float, "i" signed, "u" unsigned, "b" bool

    def __repr__(self) -> str:
        return self.name


F32 = Type("f32", "f")
I32 = Type("i32", "i")
U32 = Type("u32", "u")
BOOL = Type("bool", "b")
#: the scalar types, by name
TYPES = {t.name: t for t in (F32, I32, U32, BOOL)}
#: the subgroup size of the executors without hardware subgroups: the interpreter, the numpy
#: executor, and WGSL on an adapter without the ``subgroups`` feature
SUBGROUP_SIZE = 32


class Expr:
    """An expression; `type` is its scalar type."""

    type: Type


@dataclass(frozen=True)
class Const(Expr):
    """A literal, or a compile-time constant."""

    value: float | int | bool
    type: Type


@dataclass(frozen=True)
class Var(Expr):
    """A local variable, a scalar parameter or a loop variable."""

    name: str
    type: Type


@dataclass(frozen=True)
class Position(Expr):
    """An invocation's position (always `I32`): "global", "local" or "group" id along
    `axis`, or the "groups" count or the "size" of a workgroup along it; or (`axis` 0) its
    subgroup's "subgroup_id" in the workgroup, its "subgroup_lane" in that subgroup, or the
    "subgroup_size"."""

    what: str
    axis: int
    type: Type = I32


@dataclass(frozen=True)
class Size(Expr):
    """The size of tensor parameter `tensor` along `axis` (`I32`)."""

    tensor: str
    axis: int
    type: Type = I32


@dataclass(frozen=True)
class Unary(Expr):
    """``-a``, ``not a``, ``~a``."""

    op: str  # "neg", "not", "invert"
    a: Expr
    type: Type


@dataclass(frozen=True)
class Binary(Expr):
    """An arithmetic, bitwise, comparison or logical operation of two operands of one type
    (a comparison's or a logical one's `type` is `BOOL`)."""

    op: str  # add sub mul div floordiv mod pow and_ or_ xor lshift rshift
    #          lt le gt ge eq ne logical_and logical_or min max
    a: Expr
    b: Expr
    type: Type


@dataclass(frozen=True)
class Call(Expr):
    """A math function of the op table (exp, log, sqrt, tanh, ...), a cast (`fn` a type's
    name), or ``select(cond, a, b)``."""

    fn: str
    args: tuple[Expr, ...]
    type: Type


@dataclass(frozen=True)
class Load(Expr):
    """``memory[index]``: an element of a tensor parameter or a shared array."""

    memory: str
    index: Expr
    type: Type


class Stmt:
    """A statement."""


@dataclass(frozen=True)
class Assign(Stmt):
    """``name = value`` (a variable's type is fixed by its first assignment)."""

    name: str
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    """``memory[index] = value``."""

    memory: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class Atomic(Stmt):
    """``atomic_add`` or ``atomic_max`` of `value` into ``memory[index]`` (i32 or u32)."""

    op: str  # "add", "max"
    memory: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class If(Stmt):
    """``if cond: then else: orelse``."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Stmt):
    """``for var in range(start, stop, step)`` (`step` a nonzero constant; all `I32`)."""

    var: str
    start: Expr
    stop: Expr
    step: int
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class While(Stmt):
    """``while cond: body``."""

    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Barrier(Stmt):
    """Wait for every invocation of the workgroup (and see what they wrote to shared
    arrays and, before it, to tensors)."""


@dataclass(frozen=True)
class Subgroup(Stmt):
    """``name = subgroup_add(value)`` (`op` "add", "maximum" or "minimum", the op table's):
    the reduction of `value` over the invocation's subgroup, which each of them gets."""

    op: str
    name: str
    value: Expr


@dataclass(frozen=True)
class Param:
    """A runtime parameter: a tensor of scalar type `type` and `ndim` dims, or a scalar."""

    name: str
    type: Type
    tensor: bool
    ndim: int = 1


@dataclass(frozen=True)
class Shared:
    """A workgroup-shared array of `size` elements (a compile-time constant); also the
    declaration of an invocation's own array (`Kernel.arrays`)."""

    name: str
    type: Type
    size: int


@dataclass(frozen=True)
class Kernel:
    """A kernel, specialised for its compile-time constants: its runtime parameters, its
    shared arrays, its body, the tensors it writes (which a launch returns, in parameter
    order), those it updates atomically, and its local variables. `source` names where it
    was written."""

    name: str
    params: tuple[Param, ...]
    shared: tuple[Shared, ...]
    body: tuple[Stmt, ...]
    written: tuple[str, ...]
    atomics: frozenset[str] = field(default_factory=frozenset)
    source: str = ""
    #: the local variables (loop variables among them) and their types
    locals: tuple[tuple[str, Type], ...] = ()
    #: the arrays each invocation has of its own (``local_array``), zeros at the start
    arrays: tuple[Shared, ...] = ()

    def param(self, name: str) -> Param:
        """The parameter called `name`."""
        return next(p for p in self.params if p.name == name)
