"""The kernel language's front end: a kernel's Python source, read with `ast`, checked and
lowered to the IR (`ir.py`), specialised for its compile-time constants. Anything outside
the language is a `KernelError` naming the user's file, line and source text.

The language (docs/kernels.md): parameters are tensors (``Tensor[f32]``, ``Tensor[i32, 2]``),
scalars (``f32``, ``i32``, ``u32``) and constants (``Const``, a value fixed per compile);
names of the enclosing Python scope that hold ints, floats or bools are constants too. The
body assigns scalar variables, reads and writes tensor and shared elements, and uses
``if``/``elif``/``else``, ``for ... in range(...)``, ``for ... in static_range(n)``
(unrolled), ``while``, the operators, the op table's math functions, ``min``, ``max``,
``abs``, ``select``, casts (``f32(x)``), the positions (``global_id(0)``, ...), ``shared``,
``barrier``, ``atomic_add``, ``atomic_max``, and the subgroups' ids and reductions
(``s = subgroup_add(v)``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ops.elementwise import BINARY, UNARY
from . import interpret, ir
from .ir import KernelError

# ---- the language's names (what a kernel's annotations and calls refer to) -------------------

@dataclass(frozen=True)
class TensorType:
    """The annotation of a tensor parameter: ``Tensor[f32]`` or ``Tensor[f32, ndim]``."""

    type: ir.Type
    ndim: int = 1


class _TensorAnnotation:
    def __getitem__(self, item: Any) -> TensorType:
        scalar, ndim = item if isinstance(item, tuple) else (item, 1)
        if scalar not in (ir.F32, ir.I32):  # pyburn's tensors hold no u32
            raise KernelError(f"Tensor[...] takes f32 or i32, not {scalar!r}")
        return TensorType(scalar, int(ndim))

    def __repr__(self) -> str:
        return "Tensor"


#: ``Tensor[f32]``, ``Tensor[i32, 2]``: the annotation of a tensor parameter
Tensor = _TensorAnnotation()


class Const:
    """The annotation of a compile-time constant parameter: its value is part of the
    kernel's signature (one compile per value)."""


class Builtin:
    """A function of the kernel language: callable only inside a kernel."""

    def __init__(self, name: str, doc: str):
        self.name = name
        self.__doc__ = doc

    def __call__(self, *args: Any) -> Any:
        raise KernelError(f"{self.name}() is part of the kernel language: call it inside a "
                          "@pyburn.kernel function")

    def __repr__(self) -> str:
        return f"<kernel builtin {self.name}>"


_POSITIONS = {"global_id": "global", "local_id": "local", "group_id": "group",
              "num_groups": "groups", "group_size": "size"}
_SUBGROUP_POSITIONS = {
    "subgroup_size": ("subgroup_size", "How many invocations a subgroup has (an i32): the "
                      "adapter's, or ir.SUBGROUP_SIZE where it has no subgroups."),
    "subgroup_id": ("subgroup_id", "This invocation's subgroup in its workgroup (an i32)."),
    "subgroup_lane": ("subgroup_lane", "This invocation's place in its subgroup (an i32)."),
}
#: the subgroup reductions, and the op table's operation each applies
_REDUCTIONS = {"subgroup_add": "add", "subgroup_max": "maximum", "subgroup_min": "minimum"}
BUILTINS: dict[str, Builtin] = {
    **{name: Builtin(name, f"This invocation's {what} position along `axis` (an i32)."
                     if what in ("global", "local", "group") else
                     f"The workgroup {what} along `axis` (an i32).")
       for name, what in _POSITIONS.items()},
    "shared": Builtin("shared", "``shared(type, size)``: a workgroup-shared array."),
    "local_array": Builtin("local_array", "``local_array(type, size)``: an array of the "
                           "invocation's own (registers, where a GPU can)."),
    "barrier": Builtin("barrier", "Wait for every invocation of the workgroup."),
    "atomic_add": Builtin("atomic_add", "``atomic_add(memory, index, value)`` (i32, u32)."),
    "atomic_max": Builtin("atomic_max", "``atomic_max(memory, index, value)`` (i32, u32)."),
    **{name: Builtin(name, doc) for name, (_, doc) in _SUBGROUP_POSITIONS.items()},
    **{name: Builtin(name, f"``x = {name}(v)``: the {what} of v over the invocation's "
                     "subgroup (f32, i32, u32); every invocation of the workgroup reaches it.")
       for name, what in (("subgroup_add", "sum"), ("subgroup_max", "maximum"),
                          ("subgroup_min", "minimum"))},
    "select": Builtin("select", "``select(cond, a, b)``: a where cond, else b."),
    "static_range": Builtin("static_range", "``for i in static_range(n)``: unrolled."),
}
#: the math functions a kernel may call: the op table's unary float functions, and abs
MATH = {name: op for name, op in UNARY.items()
        if op.domain in ("float", "rounding") or name in ("abs", "sign")}
_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
              ast.FloorDiv: "floor_divide", ast.Mod: "remainder", ast.Pow: "pow",
              ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
              ast.LShift: "left_shift", ast.RShift: "right_shift"}
_COMPARISONS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
                ast.NotEq: "ne"}


# ---- lowering --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """A kernel function's parsed source: the tree, and where its lines are."""

    tree: ast.FunctionDef
    file: str
    first_line: int
    lines: tuple[str, ...]

    @classmethod
    def of(cls, fn: Callable) -> Source:
        """The source of `fn` (which must be a plain function defined in a file)."""
        try:
            lines, first = inspect.getsourcelines(fn)
            file = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError) as exc:
            raise KernelError(f"the source of {getattr(fn, '__name__', fn)!r} cannot be read "
                              f"({exc}): a kernel is a function defined in a file") from None
        tree = ast.parse(textwrap.dedent("".join(lines)))
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            raise KernelError(f"@pyburn.kernel takes a plain function, not {type(node).__name__}")
        return cls(node, file, first, tuple(lines))

    def error(self, node: ast.AST, message: str) -> KernelError:
        """A KernelError at `node`'s line: the file, the line and its text."""
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1].strip() if line - 1 < len(self.lines) else ""
        return KernelError(f"{self.file}:{self.first_line + line - 1}: {message}\n    {text}")


class Lowering:
    """One specialisation of a kernel: its parameters' types, its constants' values, and the
    IR its body lowers to."""

    def __init__(self, source: Source, scope: dict[str, Any], params: tuple[ir.Param, ...],
                 constants: dict[str, Any]):
        self.source = source
        self.scope = scope
        self.params = {p.name: p for p in params}
        self.constants = constants
        self.locals: dict[str, ir.Type] = {}
        self.shared: dict[str, ir.Shared] = {}
        self.arrays: dict[str, ir.Shared] = {}  # each invocation's own
        self.written: set[str] = set()
        self.atomics: set[str] = set()
        self.depth = 0  # how deep in loops and conditions (shared arrays go at the top)

    def fail(self, node: ast.AST, message: str) -> KernelError:
        return self.source.error(node, message)

    # ---- statements --------------------------------------------------------------------
    def block(self, body: list[ast.stmt]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for node in body:
            out.extend(self.statement(node))
        return tuple(out)

    def statement(self, node: ast.stmt) -> list[ir.Stmt]:
        if isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return []  # a docstring
            return self.call_statement(node.value)
        if isinstance(node, ast.Pass):
            return []
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.fail(node, "assign one target at a time")
            return self.assign(node.targets[0], node.value, node)
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            return self.assign(node.target, node.value, node)
        if isinstance(node, ast.AugAssign):
            op = _OPERATORS.get(type(node.op))
            if op is None:
                raise self.fail(node, f"the operator {type(node.op).__name__} is not in the "
                                      "kernel language")
            current = ast.copy_location(ast.Subscript(node.target.value, node.target.slice,
                                                      ast.Load())
                                        if isinstance(node.target, ast.Subscript) else
                                        ast.Name(getattr(node.target, "id", "?"), ast.Load()),
                                        node)
            value = ast.copy_location(ast.BinOp(current, node.op, node.value), node)
            return self.assign(node.target, value, node)
        if isinstance(node, ast.If):
            self.depth += 1
            cond = self.condition(node.test)
            then, orelse = self.block(node.body), self.block(node.orelse)
            self.depth -= 1
            return [ir.If(cond, then, orelse)]
        if isinstance(node, ast.For):
            return self.loop(node)
        if isinstance(node, ast.While):
            if node.orelse:
                raise self.fail(node, "while ... else is not in the kernel language")
            self.depth += 1
            cond = self.condition(node.test)
            body = self.block(node.body)
            self.depth -= 1
            return [ir.While(cond, body)]
        names = {ast.Return: "return (a kernel writes its results to tensors)",
                 ast.Break: "break", ast.Continue: "continue", ast.With: "with",
                 ast.Try: "try", ast.FunctionDef: "a nested function", ast.Raise: "raise",
                 ast.Delete: "del", ast.Global: "global", ast.Nonlocal: "nonlocal",
                 ast.Import: "import", ast.ImportFrom: "import"}
        what = next((text for kind, text in names.items() if isinstance(node, kind)),
                    type(node).__name__)
        raise self.fail(node, f"{what} is not in the kernel language")

    def assign(self, target: ast.expr, value: ast.expr, node: ast.stmt) -> list[ir.Stmt]:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Call) and self.builtin_name(value.func) in (
                    "shared", "local_array"):
                self.declare_array(target.id, value)
                return []
            if target.id in self.params or target.id in self.constants:
                raise self.fail(node, f"{target.id} is a parameter: assign a new variable")
            if target.id in self.shared or target.id in self.arrays:
                raise self.fail(node, f"{target.id} is an array: assign its elements")
            if isinstance(value, ast.Call) and self.builtin_name(value.func) in _REDUCTIONS:
                return [self.reduction(target.id, value)]
            expr = self.expression(value)
            known = self.locals.setdefault(target.id, expr.type)
            if known is not expr.type:
                expr = self.adapt(expr, known, value)
            return [ir.Assign(target.id, expr)]
        if isinstance(target, ast.Subscript):
            memory, element, index = self.element(target)
            self.written.add(memory)
            expr = self.adapt(self.expression(value), element, value)
            return [ir.Store(memory, index, expr)]
        raise self.fail(node, "assign a variable or an element (x = ..., t[i] = ...)")

    def reduction(self, name: str, call: ast.Call) -> ir.Subgroup:
        """``name = subgroup_add(v)`` (or max, min)."""
        what = self.builtin_name(call.func)
        if len(call.args) != 1 or call.keywords:
            raise self.fail(call, f"{what}(v) takes one value")
        value = self.expression(call.args[0])
        if value.type is ir.BOOL:
            raise self.fail(call, f"{what} takes an f32, i32 or u32, not a bool")
        known = self.locals.setdefault(name, value.type)
        if known is not value.type:
            value = self.adapt(value, known, call)
        return ir.Subgroup(_REDUCTIONS[str(what)], name, value)

    def declare_array(self, name: str, call: ast.Call) -> None:
        """``name = shared(type, size)`` or ``name = local_array(type, size)``."""
        what = self.builtin_name(call.func)
        if self.depth:
            raise self.fail(call, f"declare {what} arrays at the top of the kernel, outside "
                                  "loops and conditions")
        if len(call.args) != 2:
            raise self.fail(call, f"{what}(type, size)")
        kind = self.static(call.args[0], f"a {what} array's type")
        size = self.static(call.args[1], f"a {what} array's size")
        if not isinstance(kind, ir.Type) or kind is ir.BOOL:
            raise self.fail(call, f"{what}(type, size) takes f32, i32 or u32")
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise self.fail(call, f"a {what} array's size is a positive constant int")
        if name in self.shared or name in self.arrays or name in self.locals or \
                name in self.params:
            raise self.fail(call, f"{name} is already defined")
        (self.shared if what == "shared" else self.arrays)[name] = ir.Shared(name, kind, size)

    def call_statement(self, node: ast.expr) -> list[ir.Stmt]:
        if not isinstance(node, ast.Call):
            raise self.fail(node, "a statement that is only an expression: call barrier(), "
                                  "atomic_add() or atomic_max(), or assign the value")
        name = self.builtin_name(node.func)
        if name == "barrier":
            if node.args:
                raise self.fail(node, "barrier() takes no arguments")
            return [ir.Barrier()]
        if name in ("atomic_add", "atomic_max"):
            args = node.args
            if len(args) != 3:
                raise self.fail(node, f"{name}(memory, index, value)")
            subscript = ast.copy_location(ast.Subscript(args[0], args[1], ast.Load()), node)
            memory, element, index = self.element(subscript)
            if memory in self.arrays:
                raise self.fail(node, f"{name} works on tensors and shared arrays: {memory} "
                                      "is the invocation's own")
            if element.kind not in "iu":
                raise self.fail(node, f"{name} works on i32 and u32 memory, not {element}")
            self.written.add(memory)
            self.atomics.add(memory)
            value = self.adapt(self.expression(args[2]), element, args[2])
            return [ir.Atomic(name.removeprefix("atomic_"), memory, index, value)]
        raise self.fail(node, "a statement that is only an expression: call barrier(), "
                              "atomic_add() or atomic_max(), or assign the value")

    def loop(self, node: ast.For) -> list[ir.Stmt]:
        if node.orelse:
            raise self.fail(node, "for ... else is not in the kernel language")
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, "a for loop's variable is one name")
        call = node.iter
        if not isinstance(call, ast.Call):
            raise self.fail(node, "a for loop runs over range(...) or static_range(n)")
        kind = self.builtin_name(call.func)
        if kind == "static_range":
            count = self.static(call.args[0], "static_range's count") \
                if len(call.args) == 1 else None
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise self.fail(node, "static_range(n) takes one constant int")
            var = node.target.id
            if var in self.params or var in self.constants or var in self.locals or \
                    var in self.shared:
                raise self.fail(node, f"{var} is already defined")
            out: list[ir.Stmt] = []
            for k in range(count):
                self.constants[var] = k
                out.extend(self.block(node.body))
            self.constants.pop(var, None)
            return out
        if kind != "range":
            raise self.fail(node, "a for loop runs over range(...) or static_range(n)")
        args = call.args
        if not 1 <= len(args) <= 3:
            raise self.fail(node, "range(stop), range(start, stop) or range(start, stop, step)")
        start = self.adapt(self.expression(args[0]), ir.I32, args[0]) if len(args) > 1 \
            else ir.Const(0, ir.I32)
        stop = self.adapt(self.expression(args[1] if len(args) > 1 else args[0]), ir.I32,
                          node)
        step = self.static(args[2], "a range's step") if len(args) == 3 else 1
        if not isinstance(step, int) or isinstance(step, bool) or step == 0:
            raise self.fail(node, "a range's step is a nonzero constant int")
        var = node.target.id
        if var in self.params or var in self.shared or var in self.constants:
            raise self.fail(node, f"{var} is already defined")
        if self.locals.setdefault(var, ir.I32) is not ir.I32:
            raise self.fail(node, f"{var} is a {self.locals[var]} variable; a loop's is i32")
        self.depth += 1
        body = self.block(node.body)
        self.depth -= 1
        return [ir.For(var, start, stop, step, body)]

    # ---- expressions -------------------------------------------------------------------
    def condition(self, node: ast.expr) -> ir.Expr:
        expr = self.expression(node)
        if expr.type is not ir.BOOL:
            raise self.fail(node, f"a condition is a bool, not {expr.type} (compare it: x != 0)")
        return expr

    def static(self, node: ast.expr, what: str = "this") -> Any:
        """The compile-time value of `node`: a literal, a constant, a language name or an
        expression of those; else an error saying that `what` must be one."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.static(node.operand, what)
            if isinstance(value, (int, float)):
                return -value
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        found = self.resolve(node)
        if found is not None:
            return found
        if isinstance(node, (ast.BinOp, ast.Compare, ast.BoolOp)):
            value = self.expression(node)
            if isinstance(value, ir.Const):
                return value.value
        raise self.fail(node, f"{what} must be a compile-time constant")

    def resolve(self, node: ast.expr) -> Any:
        """What a name or ``module.attribute`` of the enclosing scope holds, or None."""
        if isinstance(node, ast.Name) and node.id not in self.locals | self.params:
            if node.id in self.scope:
                return self.scope[node.id]
            return __builtins__.get(node.id) if isinstance(__builtins__, dict) else \
                getattr(__builtins__, node.id, None)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return getattr(base, node.attr, None) if inspect.ismodule(base) else None
        return None

    def builtin_name(self, node: ast.expr) -> str | None:
        """The language function `node` names ("range", "min", ..., "exp", "f32"), or None."""
        found = self.resolve(node)
        if isinstance(found, Builtin):
            return found.name
        if isinstance(found, ir.Type):
            return found.name
        if found in (range, min, max, abs):
            return found.__name__
        if callable(found) and getattr(found, "__name__", None) in MATH:
            return found.__name__
        return None

    def expression(self, node: ast.expr) -> ir.Expr:
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (bool, int, float)):
                raise self.fail(node, f"a {type(node.value).__name__} literal is not in the "
                                      "kernel language")
            return self.constant(node.value, node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            op = _OPERATORS.get(type(node.op))
            if op is None:
                raise self.fail(node, f"the operator {type(node.op).__name__} is not in the "
                                      "kernel language")
            return self.binary(op, node.left, node.right, node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.Compare):
            parts = []
            left = node.left
            for comparison, right in zip(node.ops, node.comparators):
                compared = _COMPARISONS.get(type(comparison))
                if compared is None:
                    raise self.fail(node, f"{type(comparison).__name__} is not in the kernel "
                                          "language")
                parts.append(self.binary(compared, left, right, node))
                left = right
            out = parts[0]
            for part in parts[1:]:
                out = ir.Binary("logical_and", out, part, ir.BOOL)
            return out
        if isinstance(node, ast.BoolOp):
            op = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
            values = [self.condition(v) for v in node.values]
            out = values[0]
            for value in values[1:]:
                out = ir.Binary(op, out, value, ir.BOOL)
            return out
        if isinstance(node, ast.IfExp):
            return self.select(node.test, node.body, node.orelse, node)
        if isinstance(node, ast.Subscript):
            if self.shape_of(node) is not None:
                return self.shape_of(node)  # type: ignore[return-value]
            memory, element, index = self.element(node)
            return ir.Load(memory, index, element)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Attribute):
            value = self.resolve(node)
            if isinstance(value, (bool, int, float)):
                return self.constant(value, node)
        raise self.fail(node, f"{type(node).__name__} is not in the kernel language")

    def name(self, node: ast.Name) -> ir.Expr:
        if node.id in self.constants:
            return self.constant(self.constants[node.id], node)
        if node.id in self.locals:
            return ir.Var(node.id, self.locals[node.id])
        param = self.params.get(node.id)
        if param is not None:
            if param.tensor:
                raise self.fail(node, f"{node.id} is a tensor: index it ({node.id}[i])")
            return ir.Var(node.id, param.type)
        if node.id in self.shared or node.id in self.arrays:
            raise self.fail(node, f"{node.id} is an array: index it ({node.id}[i])")
        value = self.resolve(node)
        if isinstance(value, (bool, int, float)):
            return self.constant(value, node)
        if value is None:
            raise self.fail(node, f"{node.id} is not defined (a kernel reads its parameters, "
                                  "its variables and constants of the enclosing scope)")
        raise self.fail(node, f"{node.id} is a {type(value).__name__}: a kernel's constants "
                              "are ints, floats and bools")

    def constant(self, value: Any, node: ast.AST) -> ir.Const:
        if isinstance(value, bool):
            return ir.Const(value, ir.BOOL)
        if isinstance(value, int):
            if not -(1 << 31) <= value < (1 << 32):
                raise self.fail(node, f"the constant {value} does not fit 32 bits")
            return ir.Const(value, ir.I32)
        if isinstance(value, float):
            return ir.Const(value, ir.F32)
        raise self.fail(node, f"a {type(value).__name__} is not a kernel constant")

    def adapt(self, expr: ir.Expr, want: ir.Type, node: ast.AST) -> ir.Expr:
        """`expr` as `want`: a literal or constant takes any numeric type its value fits
        (an int one a float type too); anything else must have it already."""
        if expr.type is want:
            return expr
        if isinstance(expr, ir.Const) and want is not ir.BOOL and expr.type is not ir.BOOL:
            if want is ir.F32:
                return ir.Const(float(expr.value), ir.F32)
            if expr.type is not ir.F32 and (want is ir.I32 or expr.value >= 0):
                return ir.Const(int(expr.value), want)
        raise self.fail(node, f"{expr.type} where {want} is wanted: cast it ({want}(...))")

    def pair(self, a: ir.Expr, b: ir.Expr, node: ast.AST) -> tuple[ir.Expr, ir.Expr]:
        """Two operands brought to one type (a constant takes the other's)."""
        if isinstance(a, ir.Const) and not isinstance(b, ir.Const):
            return self.adapt(a, b.type, node), b
        return a, self.adapt(b, a.type, node)

    def binary(self, op: str, left: ast.expr, right: ast.expr, node: ast.AST) -> ir.Expr:
        a, b = self.pair(self.expression(left), self.expression(right), node)
        entry = BINARY[op]
        kind = a.type.kind
        allowed = {"float": "f", "numeric": "fiu", "compare": "fiu", "bitwise": "iu",
                   "logical": "b"}[entry.domain] + ("b" if op in ("eq", "ne") else "")
        if kind not in allowed:
            hint = " (use // for integers)" if op == "div" else ""
            raise self.fail(node, f"{op} of {a.type} values is not in the kernel language"
                                  f"{hint}")
        return _folded(ir.Binary(op, a, b, ir.BOOL if entry.returns_bool else a.type))

    def unary(self, node: ast.UnaryOp) -> ir.Expr:
        a = self.expression(node.operand)
        if isinstance(node.op, ast.UAdd):
            return a
        if isinstance(node.op, ast.Not):
            return ir.Unary("logical_not", self.condition(node.operand), ir.BOOL)
        if isinstance(node.op, ast.USub):
            if isinstance(a, ir.Const) and a.type is not ir.BOOL:
                return ir.Const(-a.value, a.type)
            if a.type.kind not in "fi":
                raise self.fail(node, f"-x of a {a.type} is not in the kernel language")
            return ir.Unary("neg", a, a.type)
        if a.type.kind not in "iu":
            raise self.fail(node, f"~x of a {a.type} is not in the kernel language")
        return ir.Unary("bitwise_not", a, a.type)

    def select(self, test: ast.expr, yes: ast.expr, no: ast.expr, node: ast.AST) -> ir.Expr:
        cond = self.condition(test)
        a, b = self.pair(self.expression(yes), self.expression(no), node)
        return ir.Call("select", (cond, a, b), a.type)

    def call(self, node: ast.Call) -> ir.Expr:
        name = self.builtin_name(node.func)
        if node.keywords:
            raise self.fail(node, "keyword arguments are not in the kernel language")
        args = node.args
        if name in _POSITIONS:
            axis = self.static(args[0]) if args else 0
            if len(args) > 1 or axis not in (0, 1, 2):
                raise self.fail(node, f"{name}(axis) takes an axis of 0, 1 or 2")
            return ir.Position(_POSITIONS[name], axis)
        if name in _SUBGROUP_POSITIONS:
            if args:
                raise self.fail(node, f"{name}() takes no arguments")
            return ir.Position(_SUBGROUP_POSITIONS[name][0], 0)
        if name in _REDUCTIONS:
            raise self.fail(node, f"a subgroup reduction is a statement of its own: "
                                  f"x = {name}(v)")
        if name == "select":
            if len(args) != 3:
                raise self.fail(node, "select(cond, a, b)")
            return self.select(args[0], args[1], args[2], node)
        if name in ("min", "max"):
            if len(args) != 2:
                raise self.fail(node, f"{name}(a, b) takes two values")
            return self.binary("minimum" if name == "min" else "maximum", args[0], args[1],
                               node)
        if name in ir.TYPES and name != "bool":
            if len(args) != 1:
                raise self.fail(node, f"{name}(x) takes one value")
            value = self.expression(args[0])
            if value.type is ir.BOOL:
                raise self.fail(node, f"{name}(a bool): use select(cond, 1, 0)")
            return value if value.type.name == name else ir.Call(name, (value,), ir.TYPES[name])
        if name in MATH:
            if len(args) != 1:
                raise self.fail(node, f"{name}(x) takes one value")
            value = self.expression(args[0])
            if isinstance(value, ir.Const) and MATH[name].domain != "numeric":
                value = self.adapt(value, ir.F32, node)
            if MATH[name].domain != "numeric" and value.type is not ir.F32:
                raise self.fail(node, f"{name} takes an f32, not a {value.type}")
            return ir.Call(name, (value,), value.type)
        if name in ("barrier", "atomic_add", "atomic_max", "shared", "local_array",
                    "static_range", "range"):
            raise self.fail(node, f"{name}(...) is a statement of its own here")
        raise self.fail(node, "this call is not in the kernel language (math functions, min, "
                              "max, abs, select, casts and the positions are)")

    def shape_of(self, node: ast.Subscript) -> ir.Size | None:
        """``t.shape[k]`` of a tensor parameter, or None for another subscript."""
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr == "shape" and \
                isinstance(value.value, ast.Name) and value.value.id in self.params:
            param = self.params[value.value.id]
            axis = self.static(node.slice)
            if not param.tensor or not isinstance(axis, int) or not -param.ndim <= axis < \
                    param.ndim:
                raise self.fail(node, f"{param.name}.shape[k] takes a constant k within its "
                                      f"{param.ndim} dims")
            return ir.Size(param.name, axis % param.ndim)
        return None

    def element(self, node: ast.Subscript) -> tuple[str, ir.Type, ir.Expr]:
        """The memory, element type and flat index of ``t[i]``, ``t[i, j]`` or ``s[i]``."""
        if not isinstance(node.value, ast.Name):
            raise self.fail(node, "index a tensor parameter or a shared array by name")
        name = node.value.id
        indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(i, ast.Slice) for i in indices):
            raise self.fail(node, "slices are not in the kernel language: index one element")
        exprs = [self.expression(i) for i in indices]
        for expr, index in zip(exprs, indices):
            if expr.type.kind not in "iu":
                raise self.fail(index, f"an index is an i32 or a u32, not a {expr.type}")
        exprs = [self.adapt(e, ir.I32, node) if e.type is ir.U32 and isinstance(e, ir.Const)
                 else e for e in exprs]
        array = self.shared.get(name) or self.arrays.get(name)
        if array is not None:
            if len(exprs) != 1:
                raise self.fail(node, f"{name} is an array: one index")
            return name, array.type, exprs[0]
        param = self.params.get(name)
        if param is None or not param.tensor:
            raise self.fail(node, f"{name} is not a tensor parameter or a shared array")
        if len(exprs) != param.ndim:
            raise self.fail(node, f"{name} has {param.ndim} dims: index it with {param.ndim}")
        flat = self.as_i32(exprs[0], node)
        for axis, expr in enumerate(exprs[1:], start=1):  # row-major
            flat = ir.Binary("add", ir.Binary("mul", flat, ir.Size(name, axis), ir.I32),
                             self.as_i32(expr, node), ir.I32)
        return name, param.type, flat

    def as_i32(self, expr: ir.Expr, node: ast.AST) -> ir.Expr:
        return expr if expr.type is ir.I32 else ir.Call("i32", (expr,), ir.I32)


def _folded(expr: ir.Binary) -> ir.Expr:
    """`expr`, computed now (as the interpreter would) when both operands are constants."""
    if isinstance(expr.a, ir.Const) and isinstance(expr.b, ir.Const):
        value = interpret.Compiler.constant(expr)
        return ir.Const(value, expr.type)
    return expr


def parameters(source: Source, annotations: dict[str, Any]
               ) -> tuple[list[ir.Param], list[str]]:
    """The kernel's runtime parameters and the names of its constant ones, in order."""
    runtime: list[ir.Param] = []
    constant: list[str] = []
    args = source.tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
        raise source.error(source.tree, "a kernel's parameters are plain, annotated names")
    for arg in args.args:
        kind = annotations.get(arg.arg)
        if isinstance(kind, TensorType):
            runtime.append(ir.Param(arg.arg, kind.type, True, kind.ndim))
        elif isinstance(kind, ir.Type) and kind is not ir.BOOL:
            runtime.append(ir.Param(arg.arg, kind, False))
        elif kind is Const:
            constant.append(arg.arg)
        else:
            raise source.error(arg, f"annotate {arg.arg} with Tensor[f32], f32, i32, u32 or "
                                    "Const")
    return runtime, constant


def lower(source: Source, scope: dict[str, Any], params: tuple[ir.Param, ...],
          constants: dict[str, Any]) -> ir.Kernel:
    """The IR of the kernel in `source` for these parameters and constant values."""
    lowering = Lowering(source, scope, params, dict(constants))
    body = lowering.block(source.tree.body)
    written = tuple(p.name for p in params if p.name in lowering.written)
    return ir.Kernel(source.tree.name, params, tuple(lowering.shared.values()), body, written,
                     frozenset(lowering.atomics), f"{source.file}:{source.first_line}",
                     tuple(lowering.locals.items()), tuple(lowering.arrays.values()))
